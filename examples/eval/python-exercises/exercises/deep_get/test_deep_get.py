from solution import deep_get

cfg = {"db": {"host": "localhost", "port": 5432, "opts": {"ssl": False}}}
assert deep_get(cfg, "db.host") == "localhost"
assert deep_get(cfg, "db.opts.ssl") is False
assert deep_get(cfg, "db.user") is None
assert deep_get(cfg, "db.host.name", "n/a") == "n/a"
print("ok")
