import { describe, expect, it } from "vitest";
import { CONTROL_CHARACTERS, codePointName, controlCharacterRule } from "../../src/domain/text.js";

describe("text: control characters (C0 but tab, DEL, C1)", () => {
  it.each([
    ["\u0000", 0x00],
    ["\u0008", 0x08],
    ["\n", 0x0a],
    ["\r", 0x0d],
    ["\u001b", 0x1b],
    ["\u001f", 0x1f],
    ["\u007f", 0x7f],
    ["\u0080", 0x80],
    ["\u009b", 0x9b],
    ["\u009f", 0x9f],
  ])("%j is refused, named by its code point and position", (char, codePoint) => {
    expect(controlCharacterRule(`ab${char}c${char}`)).toBe(
      `must not contain control characters (${codePointName(codePoint)} at character 2)`,
    );
  });

  it.each([
    ["", "empty"],
    ["tab\there", "a tab"],
    ["über ✓ 日本 \u00a0 \u00ff \u2028", "letters, symbols, NBSP, U+00FF and beyond"],
    [" !~", "printable ASCII edges"],
  ])("%j passes (%s)", (text) => {
    expect(controlCharacterRule(text)).toBeUndefined();
  });

  it("code points are named U+XXXX, upper case, at least four digits", () => {
    expect(codePointName(0x1b)).toBe("U+001B");
    expect(codePointName(0x1f600)).toBe("U+1F600");
  });

  it("the shared pattern replaces every occurrence (flowctl neutralises with it)", () => {
    expect("a\u001bb\u009bc\td".replace(CONTROL_CHARACTERS, "?")).toBe("a?b?c\td");
  });
});
