/**
 * An error answer's body as one short line for the poller's log: an AWS error's type and message,
 * an HTML page's title (moto answers some requests it cannot serve, as a just-restored store's
 * old shard iterators, with Flask's error page), else its first line; at most 200 characters.
 * The log says one line per change of the stream's state, and a page would be a dozen.
 *   {"__type":"…#ExpiredIteratorException","message":"Iterator expired"} → "ExpiredIteratorException: Iterator expired"
 *   <!doctype html>…<title>500 Internal Server Error</title>…         → "500 Internal Server Error"
 */
export function errorBodyText(body: string): string {
  const short = (text: string) => text.trim().replace(/\s+/g, " ").slice(0, 200);
  try {
    const parsed = JSON.parse(body) as { __type?: unknown; message?: unknown; Message?: unknown };
    const type = typeof parsed.__type === "string" ? parsed.__type.split("#").pop() : undefined;
    const message = parsed.message ?? parsed.Message;
    if (type !== undefined) return short(typeof message === "string" ? `${type}: ${message}` : type);
  } catch {
    // Not JSON: a page or plain text.
  }
  const title = /<title>([^<]*)<\/title>/i.exec(body)?.[1];
  if (title !== undefined) return short(title);
  return short(body.split("\n").find((l) => l.trim() !== "") ?? "");
}
