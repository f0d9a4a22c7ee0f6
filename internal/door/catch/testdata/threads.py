# Many threads open namespace names at once: notifications carry thread ids.
import sys, threading

addr = sys.argv[1]
errors, results = [], []
def work(i):
    try:
        with open("/net/dns/localhost") as f:
            data = f.read()
            if "127.0.0.1" not in data and "::1" not in data:
                errors.append("dns: " + data)
        with open("/net/tcp/" + addr, "r+b", buffering=0) as f:
            f.write(b"thread %d\n" % i)
            results.append(f.read(100).decode().strip())
    except Exception as e:
        errors.append(repr(e))
ts = [threading.Thread(target=work, args=(i,)) for i in range(16)]
for t in ts: t.start()
for t in ts: t.join()
print(len(results), "ok", sorted(errors))
