"""The shop's SQLite database: a small catalogue, warehouses, coupons and one customer's orders.

Every value is fixed (ids, prices, dates, stock), so a golden dataset can state what a
correct answer contains, and the shop's clock is fixed too (:data:`SHOP_DATE`): the 30-day
return window and "recent" orders never drift. The schema follows the design documents'
shop (nitin27may/e-commerce-agents, ``prompts/_shared/schema-context.yaml``), trimmed to
what the example's tools read: products, warehouse inventory and restocks, coupons, orders
with items and a status history. Order ids 550e8400-...-446655440001 to ...0004 and product
``abc-123`` are the ones the design documents' golden cases ask about.

:func:`connect` returns a fresh in-memory copy of the seeded database, so every request runs
against the same data (a cancelled order is back on the next request) and concurrent
requests never share a connection.
"""

from __future__ import annotations

import json
import sqlite3
import threading

SHOP_DATE = "2026-11-20"
"""Today, for the shop (ISO date)."""
CUSTOMER = {"name": "Alice Johnson", "email": "alice@example.com", "loyalty_tier": "gold"}
"""The logged-in customer: every order belongs to her."""
RETURN_WINDOW_DAYS = 30

SCHEMA = """
CREATE TABLE products (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, brand TEXT NOT NULL, category TEXT NOT NULL,
    description TEXT NOT NULL, price REAL NOT NULL, original_price REAL NOT NULL,
    rating REAL NOT NULL, review_count INTEGER NOT NULL, specs TEXT NOT NULL, tags TEXT NOT NULL,
    units_sold_30d INTEGER NOT NULL, avg_price_90d REAL NOT NULL, min_price_90d REAL NOT NULL);
CREATE TABLE warehouses (id TEXT PRIMARY KEY, name TEXT NOT NULL, region TEXT NOT NULL);
CREATE TABLE inventory (product_id TEXT REFERENCES products,
    warehouse_id TEXT REFERENCES warehouses, quantity INTEGER NOT NULL,
    PRIMARY KEY (product_id, warehouse_id));
CREATE TABLE restocks (product_id TEXT REFERENCES products, warehouse_id TEXT REFERENCES warehouses,
    expected_quantity INTEGER NOT NULL, expected_date TEXT NOT NULL);
CREATE TABLE coupons (code TEXT PRIMARY KEY, description TEXT NOT NULL, percent_off REAL NOT NULL,
    min_spend REAL NOT NULL, max_discount REAL, category TEXT, valid_until TEXT NOT NULL);
CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL, created_at TEXT NOT NULL,
    delivered_at TEXT, carrier TEXT, tracking_number TEXT, shipping_address TEXT NOT NULL);
CREATE TABLE order_items (order_id TEXT REFERENCES orders, product_id TEXT REFERENCES products,
    quantity INTEGER NOT NULL, unit_price REAL NOT NULL);
CREATE TABLE order_status_history (order_id TEXT REFERENCES orders, status TEXT NOT NULL,
    location TEXT NOT NULL, timestamp TEXT NOT NULL);
"""

# id, name, brand, category, description, price, original_price, rating, review_count, specs, tags,
# units sold in the last 30 days, 90-day average and minimum price
PRODUCTS = [
    (
        "abc-123",
        "Sony WH-1000XM5",
        "Sony",
        "Electronics",
        "Wireless noise-cancelling over-ear headphones",
        279.99,
        349.99,
        4.7,
        1523,
        {"battery": "30 hours", "weight": "250 g", "connectivity": "Bluetooth 5.2"},
        "headphones wireless noise cancelling travel audio",
        412,
        318.50,
        279.99,
    ),
    (
        "bose-qcu",
        "Bose QuietComfort Ultra Headphones",
        "Bose",
        "Electronics",
        "Wireless noise-cancelling headphones with spatial audio",
        429.00,
        429.00,
        4.6,
        871,
        {"battery": "24 hours", "weight": "254 g", "connectivity": "Bluetooth 5.3"},
        "headphones wireless noise cancelling spatial audio",
        298,
        429.00,
        399.00,
    ),
    (
        "p-1003",
        "Anker Soundcore Space Q45",
        "Anker",
        "Electronics",
        "Budget wireless headphones with adaptive ANC",
        149.99,
        149.99,
        4.4,
        640,
        {"battery": "50 hours", "weight": "295 g", "connectivity": "Bluetooth 5.3"},
        "headphones wireless noise cancelling budget",
        187,
        146.00,
        129.99,
    ),
    (
        "p-1004",
        "Apple AirPods Pro 2",
        "Apple",
        "Electronics",
        "Wireless earbuds with active noise cancellation",
        249.00,
        249.00,
        4.8,
        3310,
        {"battery": "6 hours", "weight": "5.3 g", "connectivity": "Bluetooth 5.3"},
        "earbuds wireless noise cancelling",
        655,
        241.00,
        199.00,
    ),
    (
        "p-1005",
        "JBL Tune 520BT",
        "JBL",
        "Electronics",
        "Lightweight wireless on-ear headphones",
        49.95,
        59.95,
        4.3,
        2104,
        {"battery": "57 hours", "weight": "157 g", "connectivity": "Bluetooth 5.3"},
        "headphones wireless on-ear budget",
        530,
        52.40,
        44.95,
    ),
    (
        "p-1006",
        "Sennheiser HD 600",
        "Sennheiser",
        "Electronics",
        "Open-back wired studio headphones",
        399.95,
        449.95,
        4.8,
        1190,
        {"impedance": "300 ohm", "weight": "260 g", "connectivity": "3.5 mm cable"},
        "headphones wired studio audiophile",
        64,
        405.00,
        379.95,
    ),
    (
        "p-1007",
        "Kindle Paperwhite",
        "Amazon",
        "Electronics",
        "Waterproof e-reader with a 6.8 inch display",
        159.99,
        159.99,
        4.7,
        5402,
        {"storage": "16 GB", "battery": "10 weeks"},
        "e-reader books reading waterproof gift",
        720,
        157.00,
        139.99,
    ),
    (
        "p-1008",
        "Dell XPS 13 Laptop",
        "Dell",
        "Electronics",
        "13.4 inch ultrabook with Intel Core Ultra 7",
        1299.00,
        1449.00,
        4.5,
        388,
        {"memory": "16 GB", "storage": "512 GB SSD", "weight": "1.19 kg"},
        "laptop computer ultrabook work",
        95,
        1389.00,
        1299.00,
    ),
    (
        "p-1009",
        "Logitech MX Master 3S",
        "Logitech",
        "Electronics",
        "Ergonomic wireless mouse",
        99.99,
        99.99,
        4.8,
        2750,
        {"dpi": "8000", "battery": "70 days"},
        "mouse wireless ergonomic work",
        350,
        99.99,
        89.99,
    ),
    (
        "p-2001",
        "Sherpa Fleece Throw Blanket",
        "Bedsure",
        "Home",
        "Soft sherpa fleece blanket, 150 x 200 cm",
        39.95,
        49.95,
        4.8,
        8421,
        {"material": "polyester fleece", "size": "150 x 200 cm"},
        "blanket cozy warm winter soft throw",
        910,
        44.10,
        39.95,
    ),
    (
        "p-2002",
        "Sunbeam Heated Blanket",
        "Sunbeam",
        "Home",
        "Electric heated blanket with 10 heat settings",
        89.99,
        109.99,
        4.5,
        2230,
        {"material": "microplush", "size": "Queen"},
        "blanket cozy warm winter heated electric",
        430,
        99.00,
        84.99,
    ),
    (
        "p-2003",
        "Ceramic Pour-Over Coffee Set",
        "Hario",
        "Home",
        "Ceramic dripper with glass server",
        34.50,
        34.50,
        4.6,
        980,
        {"material": "ceramic", "capacity": "600 ml"},
        "coffee kitchen pour over gift",
        120,
        34.50,
        32.00,
    ),
    (
        "p-3001",
        "Patagonia Down Sweater Jacket",
        "Patagonia",
        "Clothing",
        "Lightweight insulated down jacket for cold weather",
        279.00,
        279.00,
        4.8,
        1460,
        {"material": "recycled down", "fit": "regular"},
        "jacket warm winter insulated down cozy",
        240,
        279.00,
        239.00,
    ),
    (
        "p-3002",
        "Smartwool Merino Beanie",
        "Smartwool",
        "Clothing",
        "Merino wool beanie",
        32.00,
        32.00,
        4.7,
        615,
        {"material": "merino wool", "fit": "one size"},
        "hat beanie warm winter wool",
        300,
        32.00,
        28.00,
    ),
    (
        "p-3003",
        "Brooks Ghost 16 Running Shoes",
        "Brooks",
        "Clothing",
        "Neutral cushioned road running shoes",
        139.95,
        139.95,
        4.6,
        2890,
        {"drop": "12 mm", "weight": "269 g"},
        "running shoes road cushioned",
        380,
        139.95,
        119.95,
    ),
    (
        "p-3004",
        "Nike Pegasus 41 Running Shoes",
        "Nike",
        "Clothing",
        "Responsive everyday running shoes",
        129.99,
        139.99,
        4.5,
        1975,
        {"drop": "10 mm", "weight": "283 g"},
        "running shoes road everyday",
        410,
        136.00,
        129.99,
    ),
    (
        "p-3005",
        "Hoka Clifton 9 Running Shoes",
        "Hoka",
        "Clothing",
        "Lightweight max-cushion running shoes",
        145.00,
        145.00,
        4.7,
        3120,
        {"drop": "5 mm", "weight": "248 g"},
        "running shoes road max cushion",
        450,
        145.00,
        145.00,
    ),
    (
        "p-4001",
        "Manduka PRO Yoga Mat",
        "Manduka",
        "Sports",
        "Dense 6 mm yoga mat",
        120.00,
        120.00,
        4.8,
        1320,
        {"thickness": "6 mm", "length": "180 cm"},
        "yoga mat fitness workout",
        150,
        120.00,
        108.00,
    ),
    (
        "p-4002",
        "Bowflex SelectTech 552 Dumbbells",
        "Bowflex",
        "Sports",
        "Adjustable dumbbells, 5 to 52.5 lb",
        429.00,
        549.00,
        4.7,
        4410,
        {"range": "5 to 52.5 lb", "increments": "15 settings"},
        "dumbbells weights fitness workout strength",
        210,
        469.00,
        399.00,
    ),
    (
        "p-5001",
        "Designing Data-Intensive Applications",
        "O'Reilly",
        "Books",
        "Martin Kleppmann's guide to data systems",
        45.99,
        59.99,
        4.8,
        6120,
        {"pages": "616", "format": "paperback"},
        "book data engineering databases distributed systems",
        280,
        47.50,
        42.99,
    ),
]

WAREHOUSES = [
    ("wh-east", "East (Richmond VA)", "east"),
    ("wh-central", "Central (Dallas TX)", "central"),
    ("wh-west", "West (Portland OR)", "west"),
]

# (product, east, central, west); products not listed hold 20 / 15 / 10 units
STOCK = {
    "bose-qcu": (0, 0, 0),
    "p-3004": (12, 0, 25),
    "p-3005": (0, 3, 0),
    "abc-123": (80, 45, 25),
    "p-1008": (6, 4, 0),
}
RESTOCKS = [
    ("bose-qcu", "wh-east", 40, "2026-12-05"),
    ("bose-qcu", "wh-west", 25, "2026-12-12"),
    ("p-3005", "wh-east", 30, "2026-11-28"),
]

COUPONS = [
    ("WELCOME10", "10% off your order over $50", 10.0, 50.0, None, None, "2026-12-31"),
    (
        "TECHSAVE",
        "15% off Electronics over $100, up to $75",
        15.0,
        100.0,
        75.0,
        "Electronics",
        "2026-12-31",
    ),
    ("FALL5", "5% off everything", 5.0, 0.0, None, None, "2026-10-31"),
]

_ADDRESS = "742 Evergreen Terrace, Portland, OR 97201, US"
_ORDER = "550e8400-e29b-41d4-a716-44665544000"
# id, status, created, delivered, carrier, tracking number, [(product, quantity)],
# [(status, location, timestamp)]
ORDERS = [
    (
        _ORDER + "1",
        "shipped",
        "2026-11-14",
        None,
        "UPS",
        "1Z999AA10123456784",
        [("p-1007", 1), ("p-3002", 1)],
        [
            ("placed", "Online", "2026-11-14T10:02:00"),
            ("confirmed", "Online", "2026-11-14T10:05:00"),
            ("shipped", "East (Richmond VA)", "2026-11-16T08:40:00"),
        ],
    ),
    (
        _ORDER + "2",
        "shipped",
        "2026-11-12",
        None,
        "FedEx",
        "794612345678",
        [("p-3003", 1)],
        [
            ("placed", "Online", "2026-11-12T19:15:00"),
            ("confirmed", "Online", "2026-11-12T19:20:00"),
            ("shipped", "Central (Dallas TX)", "2026-11-13T09:30:00"),
            ("in_transit", "Memphis TN distribution center", "2026-11-15T06:10:00"),
        ],
    ),
    (
        _ORDER + "3",
        "placed",
        "2026-11-19",
        None,
        None,
        None,
        [("p-1009", 1), ("p-2003", 1)],
        [("placed", "Online", "2026-11-19T21:45:00")],
    ),
    (
        _ORDER + "4",
        "delivered",
        "2026-11-01",
        "2026-11-08",
        "UPS",
        "1Z999AA10123456785",
        [("p-1008", 1)],
        [
            ("placed", "Online", "2026-11-01T09:00:00"),
            ("shipped", "East (Richmond VA)", "2026-11-03T11:00:00"),
            ("delivered", "Portland OR", "2026-11-08T14:20:00"),
        ],
    ),
    (
        _ORDER + "5",
        "delivered",
        "2026-09-05",
        "2026-09-10",
        "USPS",
        "9400111899223344556677",
        [("p-4001", 1)],
        [
            ("placed", "Online", "2026-09-05T08:30:00"),
            ("delivered", "Portland OR", "2026-09-10T16:00:00"),
        ],
    ),
    (
        _ORDER + "6",
        "confirmed",
        "2026-11-18",
        None,
        None,
        None,
        [("p-3001", 1)],
        [
            ("placed", "Online", "2026-11-18T12:00:00"),
            ("confirmed", "Online", "2026-11-18T12:03:00"),
        ],
    ),
    (
        _ORDER + "7",
        "cancelled",
        "2026-10-20",
        None,
        None,
        None,
        [("p-1005", 1)],
        [
            ("placed", "Online", "2026-10-20T17:00:00"),
            ("cancelled", "Online", "2026-10-21T09:00:00"),
        ],
    ),
    (
        _ORDER + "8",
        "delivered",
        "2026-11-10",
        "2026-11-16",
        "UPS",
        "1Z999AA10123456786",
        [("p-2001", 2)],
        [
            ("placed", "Online", "2026-11-10T13:10:00"),
            ("delivered", "Portland OR", "2026-11-16T15:45:00"),
        ],
    ),
]


def _seed(db: sqlite3.Connection) -> None:
    db.executescript(SCHEMA)
    db.executemany(
        "INSERT INTO products VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(*p[:9], json.dumps(p[9]), *p[10:]) for p in PRODUCTS],
    )
    db.executemany("INSERT INTO warehouses VALUES (?,?,?)", WAREHOUSES)
    for product in PRODUCTS:
        quantities = STOCK.get(product[0], (20, 15, 10))
        db.executemany(
            "INSERT INTO inventory VALUES (?,?,?)",
            [(product[0], wh[0], q) for wh, q in zip(WAREHOUSES, quantities, strict=True)],
        )
    db.executemany("INSERT INTO restocks VALUES (?,?,?,?)", RESTOCKS)
    db.executemany("INSERT INTO coupons VALUES (?,?,?,?,?,?,?)", COUPONS)
    prices = {p[0]: p[5] for p in PRODUCTS}
    for order_id, status, created, delivered, carrier, tracking, items, history in ORDERS:
        db.execute(
            "INSERT INTO orders VALUES (?,?,?,?,?,?,?)",
            (order_id, status, created, delivered, carrier, tracking, _ADDRESS),
        )
        db.executemany(
            "INSERT INTO order_items VALUES (?,?,?,?)",
            [(order_id, product, quantity, prices[product]) for product, quantity in items],
        )
        db.executemany(
            "INSERT INTO order_status_history VALUES (?,?,?,?)",
            [(order_id, *event) for event in history],
        )
    db.commit()


_template: sqlite3.Connection | None = None
_lock = threading.Lock()


def connect() -> sqlite3.Connection:
    """A fresh in-memory copy of the seeded database (rows as :class:`sqlite3.Row`)."""
    global _template
    with _lock:
        if _template is None:
            _template = sqlite3.connect(":memory:", check_same_thread=False)
            _seed(_template)
        db = sqlite3.connect(":memory:", check_same_thread=False)
        _template.backup(db)
    db.row_factory = sqlite3.Row
    return db
