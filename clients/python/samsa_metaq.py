"""A MetaQ text-protocol client for Samsa, standard library only.

MetaQ's protocol (memcached-like lines, answered by opaque):

    put <topic> <partition> <len> <flag> <checksum> <opaque>\\r\\n<value>
        -> result <code> <len> <opaque>\\r\\n<messageId> <partition> <offset>
    get <topic> <group> <partition> <offset> <maxSize> <opaque>
        -> value <len> <opaque>\\r\\n<message set>  or  result <code> ...
    offset <topic> <group> <partition> <offset> <opaque>
        -> result 200 <len> <opaque>\\r\\n<nearest valid offset>

Offsets are byte positions in a partition's message stream: a consumer
adds the bytes of the whole messages it decoded; a get may end inside a
message, which the next get returns whole.

Producer sends and waits for each answer; PullConsumer reads one
partition and keeps its offset in a local file (written atomically), so a
restarted consumer goes on where it stopped.
"""

import os
import socket
import struct
import zlib

HEADER_LEN = 20  # length 4, checksum 4, id 8, flag 4
FLAG_ATTRIBUTE = 1

SUCCESS, MOVED, NOT_FOUND = 200, 301, 404


class MetaQError(Exception):
    """A broker's refusal: code and message."""

    def __init__(self, code, message):
        super().__init__("%d %s" % (code, message))
        self.code = code
        self.message = message


def checksum(data):
    """MetaQ's checksum: CRC32 & 0x7FFFFFFF."""
    return zlib.crc32(data) & 0x7FFFFFFF


class Message:
    """One message of a set."""

    def __init__(self, msg_id, flag, payload, attribute, offset, length):
        self.id = msg_id
        self.flag = flag
        self.payload = payload
        self.attribute = attribute  # None when absent
        self.offset = offset  # its position in the partition
        self.length = length  # its length in the stream

    def __repr__(self):
        return "Message(id=%d, offset=%d, payload=%r)" % (self.id, self.offset, self.payload)


def encode_value(payload, attribute=None):
    """A put's value and flag bit for payload and an optional attribute."""
    if attribute is None:
        return payload, 0
    attr = attribute.encode() if isinstance(attribute, str) else attribute
    return struct.pack(">I", len(attr)) + attr + payload, FLAG_ATTRIBUTE


def decode_set(data, base_offset):
    """The whole messages of a message set and the bytes they took."""
    msgs, used = [], 0
    while len(data) - used >= HEADER_LEN:
        n, crc, msg_id, flag = struct.unpack_from(">IIqi", data, used)
        if len(data) - used - HEADER_LEN < n:
            break  # cut by maxSize: the next get returns it whole
        body = data[used + HEADER_LEN:used + HEADER_LEN + n]
        if checksum(body) != crc:
            raise MetaQError(0, "message at offset %d: checksum mismatch" % (base_offset + used))
        attribute = None
        if flag & FLAG_ATTRIBUTE:
            (alen,) = struct.unpack_from(">I", body, 0)
            attribute, body = body[4:4 + alen], body[4 + alen:]
        msgs.append(Message(msg_id, flag, body, attribute, base_offset + used, HEADER_LEN + n))
        used += HEADER_LEN + n
    return msgs, used


class Connection:
    """One connection to a broker's port; one request at a time."""

    def __init__(self, host, port, timeout=30.0, auth=None):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.rfile = self.sock.makefile("rb")
        self.opaque = 0
        if auth is not None:
            self.sock.sendall(("auth %s %s\r\n" % auth).encode())
            line = self.rfile.readline()
            if line != b"OK\r\n":
                raise MetaQError(401, line.decode(errors="replace").strip())

    def close(self):
        try:
            self.sock.sendall(b"quit\r\n")
        except OSError:
            pass
        self.rfile.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def request(self, line, value=b""):
        """Send one request (its opaque appended) and read its answer:
        ("result", code, body) or ("value", None, body)."""
        self.opaque = (self.opaque + 1) % 0x7FFFFFFF
        opaque = self.opaque
        self.sock.sendall(("%s %d\r\n" % (line, opaque)).encode() + value)
        head = self.rfile.readline()
        if not head.endswith(b"\n"):
            raise ConnectionError("the broker closed the connection")
        f = head.split()
        if len(f) == 4 and f[0] == b"result":
            kind, code, n, got = "result", int(f[1]), int(f[2]), int(f[3])
        elif len(f) == 3 and f[0] == b"value":
            kind, code, n, got = "value", None, int(f[1]), int(f[2])
        else:
            raise MetaQError(400, head.decode(errors="replace").strip())
        body = self.rfile.read(n)
        if len(body) != n:
            raise ConnectionError("the broker closed the connection mid-answer")
        if got != opaque:
            raise MetaQError(0, "answer for opaque %d, expected %d" % (got, opaque))
        return kind, code, body


class Producer:
    """Sends messages; each send waits for the broker's answer."""

    def __init__(self, host, port, **kw):
        self.conn = Connection(host, port, **kw)

    def send(self, topic, payload, partition=-1, attribute=None, flag=0):
        """Store payload; returns (message id, partition, offset)."""
        value, attr_flag = encode_value(payload, attribute)
        line = "put %s %d %d %d %d" % (topic, partition, len(value), flag | attr_flag, checksum(value))
        kind, code, body = self.conn.request(line, value)
        if code != SUCCESS:
            raise MetaQError(code, body.decode(errors="replace"))
        msg_id, part, offset = body.split()
        return int(msg_id), int(part), int(offset)

    def close(self):
        self.conn.close()


class PullConsumer:
    """Reads one partition of a topic from the offset in offset_file (0
    when there is none) and saves its offset there after each poll."""

    def __init__(self, host, port, topic, group, partition, offset_file, max_size=64 * 1024, **kw):
        self.conn = Connection(host, port, **kw)
        self.topic, self.group, self.partition = topic, group, partition
        self.offset_file, self.max_size = offset_file, max_size
        self.offset = self._load()

    def _load(self):
        try:
            with open(self.offset_file) as f:
                return int(f.read().strip() or 0)
        except FileNotFoundError:
            return 0

    def commit(self):
        """Write the offset to the file atomically (temp file, fsync,
        rename)."""
        tmp = self.offset_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(self.offset))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.offset_file)

    def poll(self):
        """The next messages (possibly none); the offset advances past
        them and is saved."""
        while True:
            kind, code, body = self.conn.request("get %s %s %d %d %d" % (
                self.topic, self.group, self.partition, self.offset, self.max_size))
            if kind == "value":
                msgs, used = decode_set(body, self.offset)
                if used == 0:
                    self.max_size *= 2  # one message larger than max_size
                    continue
                self.offset += used
                self.commit()
                return msgs
            if code == NOT_FOUND:
                return []
            if code == MOVED:
                self.offset = int(body)  # the broker's correct offset
                self.commit()
                continue
            raise MetaQError(code, body.decode(errors="replace"))

    def close(self):
        self.conn.close()
