def valid_ipv4(s):
    """Whether s is a dotted-quad IPv4 address: four decimal numbers 0-255, no leading zeros."""
    parts = s.split(".")
    if len(parts) != 4:
        return False
    for p in parts:
        if not p.isdigit() or not p.isascii():
            return False
        if len(p) > 1 and p[0] == "0":
            return False
        if int(p) > 255:
            return False
    return True
