# python's http.server answering HEAD with 501 Not Implemented, as servers
# that implement GET only do. Usage: http_nohead.py ADDR PORT ROOT
import functools
import http.server
import sys


class NoHead(http.server.SimpleHTTPRequestHandler):
    def do_HEAD(self):
        self.send_error(501, "Unsupported method ('HEAD')")


addr, port, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
handler = functools.partial(NoHead, directory=root)
http.server.ThreadingHTTPServer((addr, port), handler).serve_forever()
