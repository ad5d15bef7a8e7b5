#!/usr/bin/python3
"""rawhttp.py [--shut] [--dated] PORT REQUEST [ADDR]

Sends REQUEST, its backslash escapes decoded ("POST / HTTP/1.1\\r\\n...",
"\\x16"), byte for byte over one TCP connection to ADDR (default 127.0.0.1):PORT,
then reads until the server closes or 10 s pass. Prints the response's
status code and, on a second line, its body; "none" when no status line
came back, "two-answers" when the body is another status line. --shut: the client's sending side is shut down after REQUEST
(a request cut off by its client). --dated: " dated" follows the status
code when the answer has a Date field. For what clients like curl refuse
to send.
"""
import codecs
import socket
import sys


def main(argv):
    shut, dated = "--shut" in argv, "--dated" in argv
    argv = [a for a in argv if a not in ("--shut", "--dated")]
    port, raw = int(argv[1]), codecs.escape_decode(argv[2].encode())[0]
    addr = argv[3] if len(argv) > 3 else "127.0.0.1"
    s = socket.create_connection((addr, port), 10)
    s.settimeout(10)
    data = b""
    try:
        s.sendall(raw)
        if shut:
            s.shutdown(socket.SHUT_WR)
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep and b"content-length:" in head.lower():
                n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(body) >= n:
                    break
    except OSError:
        pass
    s.close()
    line = data.split(b"\r\n", 1)[0].split(b" ")
    if len(line) < 2 or not line[0].startswith(b"HTTP/"):
        print("none")
        return 0
    body = data.partition(b"\r\n\r\n")[2]
    # One answer per request: a second status line where the body should
    # be is a server that answered twice.
    head = data.partition(b"\r\n\r\n")[0].lower()
    mark = " dated" if dated and b"\r\ndate: " in head else ""
    print("two-answers" if body.startswith(b"HTTP/") else line[1].decode() + mark)
    print(body.decode(errors="replace").strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
