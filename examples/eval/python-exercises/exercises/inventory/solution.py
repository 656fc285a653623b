def apply_orders(stock, orders):
    """Stock left after the orders (item, quantity); an order for more than is left is skipped.

    Returns (stock, skipped) with skipped the orders that could not be served.
    """
    stock = dict(stock)
    skipped = []
    for item, qty in orders:
        if stock.get(item, 0) >= qty:
            stock[item] -= qty
        else:
            skipped.append((item, qty))
    return stock, skipped
