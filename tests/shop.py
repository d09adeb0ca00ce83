"""The example app "Shop" of the chart-expression spec (§0), used by the expression tests."""

from __future__ import annotations

SHOP = {
    "Orders": {
        "OrderID": [1, 2, 3, 4, 5, 6, 7],
        "Customer": ["Alice", "Alice", "Bob", "Bob", "Carol", "Carol", "Eve"],
        "Year": [2020, 2021, 2020, 2021, 2021, 2021, 2021],
        "Product": ["Bolt", "Nut", "Bolt", "Washer", "Bolt", "Nut", "Nut"],
        "Amount": [10, 20, 30, 40, 50, 5, 25],
    },
    "Customers": {
        "Customer": ["Alice", "Bob", "Carol", "Dave"],
        "Country": ["Sweden", "Norway", "Sweden", "Denmark"],
    },
}
