def camel_to_snake(name):
    """Turn camelCase or PascalCase into snake_case; runs of capitals stay one word."""
    out = []
    for i, c in enumerate(name):
        if c.isupper():
            prev_lower = i > 0 and name[i - 1].islower()
            next_lower = i + 1 < len(name) and name[i + 1].islower()
            if i > 0 and (prev_lower or (next_lower and name[i - 1].isupper())):
                out.append("_")
            out.append(c.lower())
        else:
            out.append(c)
    return "".join(out)
