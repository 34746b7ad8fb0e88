/** Reads a DynamoDB UpdateExpression well enough to size the item it leaves. */
import { type AttributeMap, type AttributeValue, valueSize } from "./item-size.js";

// ---------------------------------------------------------------------------------------------
// Update expressions

export interface UpdatePlan {
  /** Top-level attribute names every action touches. */
  touched: Set<string>;
  /** Top-level names whose attribute the update removes. */
  removed: Set<string>;
  /** Applies the update to `base` (a copy); nested paths keep or add the top-level attribute. */
  apply(base: AttributeMap): AttributeMap;
}

const CLAUSE = /\b(SET|REMOVE|ADD|DELETE)\b/gi;

/** Splits on commas outside parentheses and brackets. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(" || c === "[") depth++;
    else if (c === ")" || c === "]") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = text.slice(start).trim();
  if (last) parts.push(last);
  return parts;
}

/**
 * Reads an UpdateExpression well enough to size its result: which top-level attributes it sets,
 * removes, adds to, and the values it assigns.
 *   "SET #s = :claimed, inFlight = inFlight + :one REMOVE expiresAt"
 *     touched {status, inFlight, expiresAt}, removed {expiresAt}
 */
export function planUpdate(
  expression: string,
  names: Record<string, string>,
  values: AttributeMap,
): UpdatePlan {
  const touched = new Set<string>();
  const removed = new Set<string>();
  const steps: ((item: AttributeMap, before: AttributeMap) => void)[] = [];
  const marks = [...expression.matchAll(CLAUSE)];
  const topName = (path: string): { name: string; nested: boolean } => {
    const head = /^\s*([^.[\s]+)/.exec(path)?.[1] ?? path.trim();
    return { name: names[head] ?? head, nested: /[.[]/.test(path.trim()) };
  };
  const operand = (text: string, before: AttributeMap): AttributeValue | undefined => {
    const t = text.trim();
    if (t.startsWith(":")) return values[t];
    const call = /^(\w+)\s*\((.*)\)$/s.exec(t);
    if (call) {
      const args = splitTopLevel(call[2] ?? "");
      if (call[1] === "if_not_exists")
        return operand(args[0] ?? "", before) ?? operand(args[1] ?? "", before);
      if (call[1] === "list_append") {
        const lists = args.map((a) => operand(a, before));
        return { L: lists.flatMap((l) => (l !== undefined && "L" in l ? l.L : [])) };
      }
      return undefined;
    }
    const arithmetic = splitArithmetic(t);
    if (arithmetic.length > 1) {
      // a + b: the result has about as many digits as the longer operand.
      const numbers = arithmetic.map((a) => operand(a, before)).filter((v) => v !== undefined && "N" in v);
      return numbers.reduce<AttributeValue | undefined>(
        (longest, v) => (longest === undefined || valueSize(v!) > valueSize(longest) ? v : longest),
        undefined,
      );
    }
    const { name, nested } = topName(t);
    return nested ? undefined : before[name];
  };
  for (let i = 0; i < marks.length; i++) {
    const mark = marks[i]!;
    const clause = mark[1]!.toUpperCase();
    const body = expression.slice(mark.index! + mark[0].length, marks[i + 1]?.index ?? expression.length);
    for (const action of splitTopLevel(body)) {
      if (clause === "SET") {
        const eq = action.indexOf("=");
        const { name, nested } = topName(action.slice(0, eq));
        const rhs = action.slice(eq + 1);
        touched.add(name);
        steps.push((item, before) => {
          if (nested) {
            if (item[name] === undefined) {
              const value = firstPlaceholder(rhs, values);
              if (value !== undefined) item[name] = { M: { [name]: value } };
            }
            return;
          }
          const value = operand(rhs, before);
          if (value !== undefined) item[name] = value;
        });
      } else if (clause === "REMOVE") {
        const { name, nested } = topName(action);
        touched.add(name);
        if (!nested) {
          removed.add(name);
          steps.push((item) => {
            delete item[name];
          });
        }
      } else {
        // ADD path :v / DELETE path :v
        const [path = "", valueName = ""] = action.split(/\s+/).filter(Boolean);
        const { name } = topName(path);
        touched.add(name);
        const value = values[valueName];
        steps.push((item, before) => {
          const current = before[name];
          if (clause === "DELETE" || value === undefined) return;
          if (current === undefined) item[name] = value;
          else if ("N" in current && "N" in value) {
            item[name] = valueSize(value) > valueSize(current) ? value : current;
          } else if ("SS" in current && "SS" in value) {
            item[name] = { SS: [...new Set([...current.SS, ...value.SS])] };
          } else if ("NS" in current && "NS" in value) {
            item[name] = { NS: [...new Set([...current.NS, ...value.NS])] };
          }
        });
      }
    }
  }
  return {
    touched,
    removed,
    apply(base) {
      const item = { ...base };
      for (const step of steps) step(item, base);
      return item;
    },
  };
}

/** "a + :v" → ["a", ":v"]; "a" → ["a"] (outside parentheses only). */
function splitArithmetic(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if ((c === "+" || c === "-") && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

function firstPlaceholder(text: string, values: AttributeMap): AttributeValue | undefined {
  const name = /:[A-Za-z0-9_]+/.exec(text)?.[0];
  return name === undefined ? undefined : values[name];
}
