#!/usr/bin/python3
"""httpc.py METHOD URL [-H 'Name: value']... [-d DATA | --data-binary @FILE]

The e2e tests' HTTP client where curl is missing (lib.sh's http): prints
the response body, a newline and the status code, as curl -w '\\n%{http_code}'
does; a connection failure prints only the newline (an empty code).
"""
import sys
import urllib.error
import urllib.request


def main(argv):
    method, url, rest = argv[1], argv[2], argv[3:]
    headers, data = {}, None
    i = 0
    while i < len(rest):
        flag, val = rest[i], rest[i + 1] if i + 1 < len(rest) else None
        if val is None:
            sys.exit("httpc.py: %s needs a value" % flag)
        if flag == "-H":
            name, _, value = val.partition(":")
            headers[name.strip()] = value.strip()
        elif flag in ("-d", "--data-binary"):
            if val.startswith("@"):
                with open(val[1:], "rb") as f:
                    data = f.read()
            else:
                data = val.encode()
        else:
            sys.exit("httpc.py: unsupported flag %s" % flag)
        i += 2
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            body, code = r.read(), r.status
    except urllib.error.HTTPError as e:
        body, code = e.read(), e.code
    except (OSError, ValueError) as e:
        print("httpc.py: %s" % e, file=sys.stderr)
        sys.stdout.write("\n")
        return 0
    sys.stdout.buffer.write(body + b"\n" + str(code).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
