// Package session is what every remote-file protocol (internal/provider/
// {ftp,sftp,ninep,http}) does the same way: watch a connection for
// progress, share one connection, run calls that cannot be cancelled,
// retry once, and say what failed. A protocol keeps only what is its own:
// how to dial, what the server's answers mean, its commands.
//
// # The model
//
// Watchdog. A server that makes no progress for Timeout fails the calls
// that wait on it. A wait is a Read or Write blocked on the connection, or
// a request awaiting its answer; progress is bytes arriving. While at
// least one wait is pending, something must arrive every Timeout (counted
// from the later of the last arrival and the start of the wait that
// ended a quiet spell), or the watchdog fires once: the connection is cut
// and every call on it fails with ETIMEDOUT. A slow transfer that keeps
// moving never times out; an idle connection never does either. One
// Watchdog serves three shapes:
//   - Watch(conn): each Read and Write is a wait (FTP control and data
//     connections, the 9P connection: their libraries read only while a
//     request waits);
//   - Observe(conn, dog): arrivals only, the protocol brackets requests
//     with Begin/End (SSH, whose library reads all the time); an optional
//     probe asks an idle peer for a sign of life every Timeout;
//   - WatchReader(r): each Read is a wait (an HTTP response body).
//
// Session. One connection to a server, dialled when a call first needs it
// (concurrent callers share that dial), shared by every call, replaced when
// it breaks. Each connection carries a Line: how it ends, once, for the
// first reason given (a stall, a loss, Close); calls still on it report
// that reason. Call runs one operation:
//   - in its own goroutine, because the protocol's calls cannot be
//     cancelled: a cancelled caller returns at once (EINTR) and abandons
//     the call, which runs to its end (the watchdog bounds it) without
//     touching the caller's memory; what it produced (an open file) goes
//     to its release func;
//   - the error is judged: the protocol's own *ns.Error passes; a
//     connection that ended gives its reason; the protocol's Answer hook
//     turns the server's refusals into errnos; anything else means the
//     connection broke, and it is ended (EIO, or ETIMEDOUT after a stall);
//   - a call whose connection broke runs once more on a new connection
//     when all of these hold (Again): it is the first attempt, the
//     connection was reused (it may have died while idle: the server
//     restarted), the failure was not a timeout (a stalled server stalls
//     again, and the caller has waited already), and the call's Retry
//     allows it (nil never: changes that must not happen twice; Unsent:
//     only while no data went out; Always: reads).
//
// On runs an operation on a connection a call already holds (a file open
// on it) the same way, without retry. Close ends the connection, stops a
// dial in progress and waits for every goroutine the session started.
//
// Errors. Every error a protocol returns reads "PROTO HOST: OP PATH: cause"
// (Server.Error), with the errno a program should see; the cause is the
// last argument. Failures of the connection itself are worded once:
// Unreachable (while connecting: ECONNREFUSED and the socket's other
// errnos, ENOENT for an unknown host, EACCES for an untrusted
// certificate, ETIMEDOUT), Stalled (ETIMEDOUT), Lost (EIO), Interrupted
// (the caller's context: EINTR), ErrClosed (EIO).
//
// FTP keeps its pool of connections (one transfer per connection, a
// connection kept for metadata) and cancels a call by cutting its
// connection rather than abandoning it, but uses the same watchdog, retry
// rule and errors. HTTP leaves connections and retries to net/http and
// uses the watchdog and errors.
package session
