"""
Importing this module makes moto's expression handling cheaper with the same answers (moto's hot
spots, point 3 of moto-launcher.py):

- Update expressions validated once, not once per node. moto's clause nodes all subclass
  `UpdateExpression`, so its action-count and overlapping-paths validators, written for the root,
  run at every node of the expression, each over the whole subtree below it: quadratic in the
  clauses (a batch of 18 reports is ~70). They run at the root only, which sees every clause the
  inner runs saw, so an expression is refused exactly when it was before (its message names
  the clashing paths of the whole expression).
- Update expressions parsed once per text. moto parses an UpdateItem's expression twice per
  request (to check its placeholders, then to validate and run it), and a stack sends the same
  few texts over and over (the placeholders are numbered by position, the values differ). The
  parsed tree is kept by its text (an LRU): moto only reads it, and its validator works on a
  copy; a text that does not parse raises every time, as before. That copy is unpickled from
  the tree's pickle, made once (a deep copy walked the ~150 nodes of a report batch's tree in
  Python, every request); a value list_append copies is still deep-copied.
- The validator's eight other passes walk the tree with each node's processor looked up once
  per node class (moto tests every node against every processor's classes with isinstance, an
  ABC check in Python: ~1,500 node visits per request), and the two root-only passes above do
  not walk at all. The nodes visited, their order and the child hook are moto's.
- A condition expression's tokens are kept by its text (the lexer matches six regexes per token,
  recompiling each through re's cache); the tokens are immutable but for an empty list of
  children, which each parse gets fresh. And a condition is parsed once per request: moto parses
  a PutItem's, UpdateItem's or DeleteItem's condition twice (to check its placeholders, then to
  evaluate it), with the same text and the very same names and values objects; the last parse
  is kept with those objects (held, so identity cannot be reused) and handed to the next parse
  of exactly them, with the placeholders it found. An UpdateItem spent ~25 % of its time in the
  two parses.
- Reserved words as a set (moto scans a list of 573 words for every attribute name).
"""
import copy
import functools
import pickle

from collections import deque

from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.parsing import validators
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node, UpdateExpression
from moto.dynamodb.parsing.expressions import UpdateExpressionParser
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords
from moto.dynamodb.parsing.validators import ActionCountValidator, OverlappingPathsValidator


def _at_the_root(check):
    def root_only(self, node):
        return check(self, node) if type(node) is UpdateExpression else node

    return root_only


ActionCountValidator.verify_action_counts = _at_the_root(ActionCountValidator.verify_action_counts)
OverlappingPathsValidator.check_for_overlapping_paths = _at_the_root(
    OverlappingPathsValidator.check_for_overlapping_paths
)
_ROOT_ONLY = (ActionCountValidator, OverlappingPathsValidator)

# (traverser class, node class) -> the index of the node's processor in the traverser's map, -1 for
# none, -2 for a child that is not a node. The maps are literal dicts of classes, one per class.
_PROCESSOR_OF = {}
_NO_HOOK = DepthFirstTraverser.pre_processing_of_child


def _walk(processors, traverser, hook, node, child_id):
    kind = type(node)
    index = _PROCESSOR_OF.get((traverser, kind))
    if index is None:
        if not issubclass(kind, Node):
            index = -2
        else:
            index = next((i for i, (cls, _) in enumerate(processors) if issubclass(kind, cls)), -1)
        _PROCESSOR_OF[(traverser, kind)] = index
    if index == -2:
        return node
    parent = node.parent
    if node.children is not None:
        for i, child in enumerate(node.children):
            if hook is not None:
                hook(node, i)
            _walk(processors, traverser, hook, child, i)
    if index >= 0:
        node = processors[index][1](node)
        node.parent = parent
        if parent:
            parent.children[child_id] = node
    return node


def _traverse(self, node, child_id=-1):
    if type(self) in _ROOT_ONLY:
        return self.process(node) if type(node) is UpdateExpression else node
    hook = None if type(self).pre_processing_of_child is _NO_HOOK else self.pre_processing_of_child
    return _walk(tuple(self._processing_map().items()), type(self), hook, node, child_id)


DepthFirstTraverser.traverse_node_recursively = _traverse

_parse_update = functools.lru_cache(maxsize=4096)(UpdateExpressionParser.make)
UpdateExpressionParser.make = staticmethod(_parse_update)

_pickled_trees = {}  # id(tree) -> (tree, its pickle): the parsed trees the LRU above hands out


def _copy_tree(tree):
    if type(tree) is not UpdateExpression:  # a value list_append copies before appending to it
        return copy.deepcopy(tree)
    held = _pickled_trees.get(id(tree))
    if held is None or held[0] is not tree:
        if len(_pickled_trees) > 8192:
            _pickled_trees.clear()
        held = _pickled_trees[id(tree)] = (tree, pickle.dumps(tree, pickle.HIGHEST_PROTOCOL))
    return pickle.loads(held[1])


validators.deepcopy = _copy_tree

_lex_condition = ConditionExpressionParser._lex_condition_expression


@functools.lru_cache(maxsize=4096)
def _lexed(text):
    return tuple(_lex_condition(ConditionExpressionParser(text, None, None)))


def _lex_condition_cached(self):
    return deque(token._replace(children=[]) for token in _lexed(self.condition_expression))


ConditionExpressionParser._lex_condition_expression = _lex_condition_cached

_parse_condition = ConditionExpressionParser.parse
_last_condition = None  # (text, names, values, names found, values found, op): the last parse's


def _parse_condition_once(self):
    global _last_condition
    text = self.condition_expression
    names, values = self.expression_attribute_names, self.expression_attribute_values
    held = _last_condition
    if held is not None and held[0] == text and held[1] is names and held[2] is values:
        self.expr_attr_names_found.extend(held[3])
        self.expr_attr_values_found.extend(held[4])
        return held[5]
    op = _parse_condition(self)  # a text that does not parse raises, every time, and is not kept
    found = (tuple(self.expr_attr_names_found), tuple(self.expr_attr_values_found))
    _last_condition = (text, names, values, *found, op)
    return op


ConditionExpressionParser.parse = _parse_condition_once

ReservedKeywords.KEYWORDS = frozenset(ReservedKeywords.get_reserved_keywords())
