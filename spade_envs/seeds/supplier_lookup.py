"""Answer a question about a small database that can only be read through tools."""

from __future__ import annotations

from spade_envs import ToolEnv, ToolError, answers_match

# hole: supplier cities (at least 8 distinct)
_CITIES = ["Lyon", "Osaka", "Quito", "Perth", "Tampere", "Accra", "Dayton", "Brno"]
_FIRST = ["Acme", "Globex", "Initech", "Umbrella", "Vandelay", "Stark", "Wonka", "Tyrell"]
# hole: product names (at least 8 distinct)
_ITEMS = ["bolt", "gear", "valve", "pump", "hinge", "spring", "gasket", "rotor", "pulley", "clamp"]


class SupplierLookup(ToolEnv):
    skill = "logic"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A parts database has two tables, suppliers and products. Using the select tool, "
        "find the city of the supplier of the most expensive product that is in stock, "
        "and answer with <answer>city</answer>."
    )
    # hole: turns allowed (the reference needs 3) [3, 20]
    max_turns = 10
    # hole: products and suppliers in the database [1, 8]
    knobs = {"products": 8, "suppliers": 4}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = (
        "products <= len(_ITEMS)",
        "suppliers <= len(_CITIES)",
        "len(_ITEMS) >= 8",
        "len(_CITIES) >= 8",
    )

    def _reset(self) -> str:
        names = self.rng.sample(_FIRST, self.suppliers)
        cities = self.rng.sample(_CITIES, self.suppliers)
        self.tables = {
            "suppliers": [
                {"id": i + 1, "name": n, "city": c} for i, (n, c) in enumerate(zip(names, cities))
            ],
            "products": [],
        }
        prices = self.rng.sample(range(5, 500), self.products)
        for i, item in enumerate(self.rng.sample(_ITEMS, self.products)):
            self.tables["products"].append(
                {
                    "id": i + 1,
                    "name": item,
                    "supplier_id": self.rng.randint(1, self.suppliers),
                    "price": prices[i],
                    "stock": self.rng.choice([0, 0, 3, 7, 12]),
                }
            )
        if all(p["stock"] == 0 for p in self.tables["products"]):
            self.tables["products"][0]["stock"] = 5
        in_stock = [p for p in self.tables["products"] if p["stock"] > 0]
        self.target = max(in_stock, key=lambda p: p["price"])
        supplier = self.tables["suppliers"][self.target["supplier_id"] - 1]
        self.answer = supplier["city"]
        return (
            "Question: in which city is the supplier of the most expensive product that is "
            "in stock (stock > 0)? Tables: suppliers(id, name, city), "
            "products(id, name, supplier_id, price, stock). Use the tools, then reply "
            "<answer>city</answer>."
        )

    def tool_list_tables(self) -> list[str]:
        """List the tables of the database."""
        return sorted(self.tables)

    def tool_select(self, table: str, column: str = "", equals: str = "") -> list[dict]:
        """Read rows of a table, optionally only those where a column equals a value.

        Args:
            table: Table name: suppliers or products.
            column: Column to filter on; empty for all rows.
            equals: Value the column must equal (compared as text).
        """
        if table not in self.tables:
            raise ToolError(f"no table {table!r}; tables are {', '.join(sorted(self.tables))}")
        rows = self.tables[table]
        if column:
            if column not in rows[0]:
                raise ToolError(
                    f"table {table} has no column {column!r}; columns: {', '.join(rows[0])}"
                )
            rows = [r for r in rows if str(r[column]) == equals]
        return [dict(r) for r in rows]

    def _answer(self, answer: str):
        if answers_match(answer, self.answer):
            return f"Correct: {self.answer}.", 1.0, True
        return "Wrong answer.", 0.0, True

    # hole: rule: the privileged hint (never the city)
    def hint(self) -> str:
        return (
            f"The product you need is the {self.target['name']} (price {self.target['price']}); "
            "look up its supplier_id in suppliers."
        )

    def solution(self) -> list[str]:
        sid = self.target["supplier_id"]
        return [
            '<tool_call>{"name": "select", "arguments": {"table": "products"}}</tool_call>',
            '<tool_call>{"name": "select", "arguments": {"table": "suppliers", '
            f'"column": "id", "equals": "{sid}"}}}}</tool_call>',
            f"<answer>{self.answer}</answer>",
        ]
