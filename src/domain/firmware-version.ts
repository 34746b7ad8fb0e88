/**
 * What a firmware version may look like, wherever one comes in (a run's or a task's
 * target_version, a baseline, an image's upload): it names an image (`firmware://TYPE/VERSION`,
 * the image store's object key), so it is a label, never a path or a document.
 *
 *   1 to 128 characters: letters, digits, '.', '_', '+' and '-', starting with a letter or a digit
 *   "2.0.0", "1.3.0-rc1", "v2_24+build.7"                ok
 *   "../../etc/passwd", "2.0/evil", "2.0 beta", ".hidden"  refused, the rule named
 *
 * The set covers semantic versions with pre-release and build parts and vendors' dotted or
 * underscored forms; '/', '\', ':', whitespace, '%' and control characters are what could make a
 * version a path, a URL or a terminal command, and are refused (InvalidArgument naming the field).
 */

export const FIRMWARE_VERSION_MAX = 128;
const VERSION = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;

/** The rule `version` breaks, or undefined when it is a version (the caller names the field). */
export function firmwareVersionRule(version: string): string | undefined {
  if (version.length === 0) return "must not be empty";
  if (version.length > FIRMWARE_VERSION_MAX) {
    return `must be at most ${FIRMWARE_VERSION_MAX} characters (got ${version.length})`;
  }
  if (!VERSION.test(version)) {
    return `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got ${JSON.stringify(version)})`;
  }
  return undefined;
}
