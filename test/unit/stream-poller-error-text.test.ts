/**
 * The local stream poller's log names a failed call's answer in one short line (local/stream-poller.ts
 * `errorBodyText`): an AWS error's type and message, an HTML error page's title, else the first
 * line; never the page itself, whose lines would break the log's one line per change of state.
 */
import { describe, expect, it } from "vitest";
import { errorBodyText } from "../../local/error-body-text.js";

const FLASK_500 = `<!doctype html>
<html lang=en>
<title>500 Internal Server Error</title>
<h1>Internal Server Error</h1>
<p>The server encountered an internal error and was unable to complete your request. Either the server is overloaded or there is an error in the application.</p>
`;

describe("errorBodyText: a failed stream call's answer as one log line", () => {
  it("an AWS JSON error: its type (without the namespace) and message", () => {
    const body = JSON.stringify({
      __type: "com.amazonaws.dynamodb.v20120810#ExpiredIteratorException",
      message: "Iterator expired",
    });
    expect(errorBodyText(body)).toBe("ExpiredIteratorException: Iterator expired");
    expect(errorBodyText(JSON.stringify({ __type: "x#ResourceNotFoundException" }))).toBe(
      "ResourceNotFoundException",
    );
  });

  it("an HTML error page (moto's, for a request it cannot serve): its title alone, one line", () => {
    expect(errorBodyText(FLASK_500)).toBe("500 Internal Server Error");
  });

  it("anything else: its first non-empty line, whitespace folded, at most 200 characters", () => {
    expect(errorBodyText("\n  upstream   timed out \nsecond line")).toBe("upstream timed out");
    expect(errorBodyText("x".repeat(500))).toHaveLength(200);
    expect(errorBodyText("")).toBe("");
  });
});
