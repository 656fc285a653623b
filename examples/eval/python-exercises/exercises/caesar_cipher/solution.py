def caesar(text, shift):
    """Shift every lower-case letter of text by shift places, wrapping from z to a.

    Deliberately buggy (the suite expects this case to fail): it forgets to
    wrap around, so 'z' shifted by 1 is '{' instead of 'a'.
    """
    out = []
    for c in text:
        if "a" <= c <= "z":
            out.append(chr(ord(c) + shift))
        else:
            out.append(c)
    return "".join(out)
