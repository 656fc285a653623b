def matmul(a, b):
    """The product of matrices a (n x m) and b (m x p), as lists of rows."""
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))]
            for i in range(len(a))]
