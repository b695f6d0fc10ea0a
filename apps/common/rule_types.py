"""The kinds of business rule a tool version may declare. A version declares rules by kind
(apps/catalog/definitions.py) and a tenant policy overrides them by kind (apps/tenancy), so
the names sit below both."""

# Rules the arguments alone can satisfy answer invalid_args; the others business_rule.
ARGUMENT_RULES = ("date_order", "max_span")
STATE_RULES = ("task_budget", "daily_quota", "requires_earlier_call", "state_limit", "custom")
RULE_TYPES = ARGUMENT_RULES + STATE_RULES
