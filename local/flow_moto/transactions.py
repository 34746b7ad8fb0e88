"""
Importing this module replaces moto's TransactWriteItems (point 2 of moto-launcher.py):

A copy-free TransactWriteItems. moto deep-copies every table a transaction touches before it
starts (O(table size): 177 ms per claim once a table holds a few thousand items) and, on
cancellation, swaps the copies in, which leaves open stream readers on a dead table. Under the
lock no other request runs, so the replacement checks every condition against the state before
the transaction (as DynamoDB does), cancels with moto's own per-item reasons if any fails, and
only then applies the writes; a write that still fails (a malformed update expression) is
undone from copies of the touched items only.

"""
import copy

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed, MockValidationException, MultipleTransactionsException,
    TooManyTransactionsException, TransactionCanceledException, TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend


def transact_write_items(self, transact_items):
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    seen, ops, errors = set(), [], []
    for entry in transact_items:
        if len(entry) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(entry.items()))
        old = None
        try:
            if op_type not in ("ConditionCheck", "Put", "Delete", "Update"):
                raise ValueError("Unsupported transaction operation")
            table_name = op["TableName"]
            if op_type == "Put":
                table = self.get_table(table_name)
                attrs = op["Item"]
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]
            ident = (str(table_name), str(dict(sorted(key.items()))))
            if ident in seen:
                raise MultipleTransactionsException()
            seen.add(ident)
            current = self.get_item(table_name, key)
            condition = op.get("ConditionExpression")
            if condition is not None:
                check = get_filter_expression(
                    condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues"))
                if not check.expr(current):
                    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                        old = current.to_json()["Attributes"]
                    raise ConditionalCheckFailed(item=old)
            ops.append((op_type, op, table_name, key, copy.deepcopy(current)))
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), old))
        except Exception as e:
            errors.append((type(e).__name__, str(e), old))
    if any(code is not None for code, _, _ in errors):
        raise TransactionCanceledException(errors)
    applied = []
    try:
        for op_type, op, table_name, key, before in ops:
            names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            if op_type == "Put":
                self.put_item(table_name, op["Item"], expression_attribute_names=names,
                              expression_attribute_values=values)
            elif op_type == "Delete":
                self.delete_item(table_name, key, expression_attribute_names=names,
                                 expression_attribute_values=values)
            elif op_type == "Update":
                self.update_item(table_name, key, update_expression=op["UpdateExpression"],
                                 expression_attribute_names=names, expression_attribute_values=values)
            applied.append((table_name, key, before))
    except Exception:
        for table_name, key, before in reversed(applied):
            if before is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, before.to_json()["Attributes"])
        raise

DynamoDBBackend.transact_write_items = transact_write_items
