/**
 * Text a client sends and an operator later reads: the one rule for what it may not contain.
 *
 * Control characters are what a terminal acts on instead of printing: C0 (U+0000–U+001F) except
 * tab, DEL (U+007F) and C1 (U+0080–U+009F, where U+009B is a one-character CSI). A run named
 * "\x1b[2J" would clear the screen of whoever lists runs, so such text is refused at the door
 * (InvalidArgument naming the field) and never stored. Tab is allowed: it is whitespace and moves
 * the cursor only forward. flowctl neutralises the same characters in whatever it prints
 * (`terminalSafe` in cli/output.ts), for text stored before this rule or produced by the service.
 */

/** Every control character this rule refuses; `g` for replacing, so use it with `replace` only. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
export const CONTROL_CHARACTERS = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

/** `U+001B`: how a code point is named in messages. */
export function codePointName(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
}

/**
 * The rule a text breaks, or undefined if it is clean:
 *
 *   controlCharacterRule("ok\tfine")  → undefined
 *   controlCharacterRule("a\x1b[2J")  → "must not contain control characters (U+001B at character 1)"
 *
 * Only the first offending character is named; "character" counts UTF-16 code units, as
 * JavaScript and the proto3 JSON mapping do.
 */
export function controlCharacterRule(text: string): string | undefined {
  const match = new RegExp(CONTROL_CHARACTERS.source).exec(text);
  if (match === null) return undefined;
  const codePoint = match[0].charCodeAt(0);
  return `must not contain control characters (${codePointName(codePoint)} at character ${match.index})`;
}
