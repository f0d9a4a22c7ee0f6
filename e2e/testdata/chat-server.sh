#!/bin/bash
CHATFILE=chatlog.txt
PORT=${CHAT_PORT:-8000}

function INIT() { touch $CHATFILE; }
function PROG() {
    echo -n "Username: "
    read username
    echo $username joined >> $CHATFILE
    tail -f $CHATFILE &
    while read nextline
    do echo $username ": " $nextline >> $CHATFILE; done
    echo $username left >> $CHATFILE;
}

# General multiclient TCP server
SERVERFILE=${WIREFS_MOUNT:-/proc/netfs}/tcp/$PORT
INIT
(while ( echo -n ) do
    (PROG &) <> $SERVERFILE 1>&0 2>&0
done) 3< $SERVERFILE
# Loop forever
# Wait for client connection
# and redirect stdin, stdout, stderr
# Open original file handle
# to bind and listen on server port
