# Opens argv[1] (an echo server in the namespace) and drives it with epoll,
# select and poll: only a real kernel socket works with all three.
import os, select, socket, stat, sys

fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
print("socket" if stat.S_ISSOCK(os.fstat(fd).st_mode) else "not a socket")
ep = select.epoll()
ep.register(fd, select.EPOLLIN)
if ep.poll(0.2):
    sys.exit("readable before anything was sent")
os.write(fd, b"epoll ping\n")
events = ep.poll(5)
if not events or events[0][1] & select.EPOLLIN == 0:
    sys.exit("no EPOLLIN")
print(os.read(fd, 100).decode().strip())
os.write(fd, b"select ping\n")
r, _, _ = select.select([fd], [], [], 5)
print(os.read(fd, 100).decode().strip() if r else "select timed out")
p = select.poll()
p.register(fd, select.POLLIN)
os.write(fd, b"poll ping\n")
print(os.read(fd, 100).decode().strip() if p.poll(5000) else "poll timed out")
s = socket.socket(fileno=fd)
print("peer", s.getpeername()[0])
