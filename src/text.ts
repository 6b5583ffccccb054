/**
 * Text PostgreSQL will store. Its `text` and `jsonb` refuse two things a JavaScript string may hold: NUL (U+0000) and a
 * lone surrogate (half of a UTF-16 pair, e.g. `\ud83d` alone, which JSON happily escapes). One such character in a
 * customer's name would make every write of that ticket throw, forever. Each refused code unit becomes U+FFFD, the
 * replacement character; everything else, valid surrogate pairs (emoji) included, is kept as given.
 */

export const REPLACEMENT_CHARACTER = '\ufffd';

// NUL, a high surrogate not followed by a low one, a low surrogate not preceded by a high one.
const REFUSED = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// Cheap first look: most strings hold neither NUL nor any surrogate, and skip the replace.
const SUSPECT = /[\u0000\ud800-\udfff]/;

/** `text` with every code unit PostgreSQL refuses replaced by U+FFFD; the same string when there is none. */
export function storableText(text: string): string {
  return SUSPECT.test(text) ? text.replace(REFUSED, REPLACEMENT_CHARACTER) : text;
}

/**
 * A JSON value (as `JSON.parse` gives it) with every string, object keys included, made storable. Returns the very
 * same value when nothing needed replacing, so a well-formed payload costs one scan and no copy.
 */
export function storableJson<T>(value: T): T {
  return storable(value) as T;
}

function storable(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = storable(value[i]);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return out ?? value;
  }
  if (typeof value === 'object' && value !== null) {
    let changed = false;
    const entries: Array<[string, unknown]> = [];
    for (const [k, v] of Object.entries(value)) {
      const key = storableText(k);
      const val = storable(v);
      if (key !== k || val !== v) changed = true;
      entries.push([key, val]);
    }
    return changed ? Object.fromEntries(entries) : value;
  }
  return value;
}
