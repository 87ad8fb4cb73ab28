"""Opens N keep-alive connections, sends one GET /healthz on each, reads the answer, then holds
them idle until SIGTERM. Prints 'ready N' once all are idle."""
import signal, socket, sys

port, count = int(sys.argv[1]), int(sys.argv[2])
request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
socks = []
for i in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit(f"connection {i} closed")
        data += chunk
    socks.append(s)
print("ready", len(socks), flush=True)
# Waits for the signal itself: a `sleep` feeding stdin outlived every run and held its output open.
while True:
    signal.pause()
