"""Checks an order for cairn's sample workflow: accepted when it has items and a total."""


def handler(event, context):
    items = event.get("items") or []
    total = sum(item.get("price", 0) * item.get("quantity", 1) for item in items)
    return {"orderId": event.get("orderId"), "total": total, "accepted": bool(items) and total > 0}
