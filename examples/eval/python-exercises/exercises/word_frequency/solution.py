def word_frequency(text):
    """How often each word occurs in text, ignoring case and punctuation around words.

    Deliberately buggy (the suite expects this case to fail): it neither
    lower-cases nor strips punctuation.
    """
    counts = {}
    for w in text.split():
        counts[w] = counts.get(w, 0) + 1
    return counts
