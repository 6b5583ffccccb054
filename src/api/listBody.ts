import { InvalidResponseError } from '../errors.ts';

/**
 * A list answer's body kept as the bytes that arrived, read a batch of items at a time. A list may hold 100,000
 * tickets (16 MB of JSON): parsed whole, with its items mapped and the mirror's rows beside them, one poll took 430 MB
 * of resident memory; read in batches, only the bytes (external to the JavaScript heap) and one batch of objects live
 * at once (bench/README.md, "The 100,000-item list").
 *
 * `scanListBody` finds where the top-level array's elements are separated (commas outside strings, one level deep), in
 * one pass over the bytes and without building a value. Each element is then parsed on its own with `JSON.parse`, when
 * its batch is asked for: the body is `[`, the elements joined by those commas, `]`, so a body every element of which
 * parses is valid JSON, whatever the scan took for a string or a bracket (an empty element does not parse). A streaming
 * JSON library was measured first: stream-json took 756 ms to read the 16 MB body, JSON.parse 130 ms, and JSON.parse
 * element by element as long (85–105 ms). Parsing a batch's bytes at once would be as fast, but its megabyte-long
 * string lands in V8's large-object space, freed only by a full collection: the process grew by ~100 MB a poll.
 *
 * Structural bytes (`"`, `\`, `[`, `]`, `{`, `}`, `,`) are ASCII and never part of a multi-byte UTF-8 sequence, so the
 * bytes are scanned as they are; a batch is decoded as got decodes a text body (invalid sequences become U+FFFD).
 */
export class ListBody {
  readonly #bytes: Buffer | null;
  /** Offsets of the bytes after `[` and of `]`, when read from bytes. */
  readonly #start: number;
  readonly #end: number;
  /** Offsets of the top-level commas. */
  readonly #commas: readonly number[];
  readonly #values: readonly unknown[] | null;
  /** Number of items the array holds. */
  readonly length: number;

  private constructor(bytes: Buffer | null, start: number, end: number, commas: readonly number[], length: number, values: readonly unknown[] | null) {
    this.#bytes = bytes;
    this.#start = start;
    this.#end = end;
    this.#commas = commas;
    this.length = length;
    this.#values = values;
  }

  /** A body already parsed (a fallback of the client's, and tests). */
  static of(values: readonly unknown[]): ListBody {
    return new ListBody(null, 0, 0, [], values.length, values);
  }

  /** @internal scanListBody's result. */
  static scanned(bytes: Buffer, start: number, end: number, commas: readonly number[], length: number): ListBody {
    return new ListBody(bytes, start, end, commas, length, null);
  }

  /** Every item at once (what a small list's reader may want). Throws as `batches` does. */
  all(): unknown[] {
    return [...this.batches(Math.max(1, this.length))].flat();
  }

  /**
   * Item `index` (0-based), parsed on its own. Throws InvalidResponseError when it is not valid JSON: the body was
   * malformed after all, and whatever was done with the items before must be undone.
   */
  item(index: number): unknown {
    if (this.#values) return this.#values[index];
    const from = index === 0 ? this.#start : this.#commas[index - 1]! + 1;
    const to = index === this.length - 1 ? this.#end : this.#commas[index]!;
    try {
      return JSON.parse(this.#bytes!.toString('utf8', from, to));
    } catch {
      throw new InvalidResponseError(`the list's body is not valid JSON (item ${index}, bytes ${from} to ${to})`);
    }
  }

  /**
   * The items, `size` at a time, each batch parsed when it is asked for. Throws InvalidResponseError when a batch is
   * not valid JSON: the body was malformed after all, and whatever was done with the batches before must be undone.
   */
  *batches(size: number): Generator<unknown[]> {
    if (!(size >= 1)) throw new RangeError(`batch size ${size}`);
    for (let first = 0; first < this.length; first += size) {
      const count = Math.min(size, this.length - first);
      if (this.#values) {
        yield this.#values.slice(first, first + count);
        continue;
      }
      const batch = new Array<unknown>(count);
      for (let k = 0; k < count; k++) batch[k] = this.item(first + k);
      yield batch;
    }
  }
}

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

const isSpace = (c: number | undefined) => c === SPACE || c === LF || c === CR || c === TAB;

/**
 * Arrays and objects nested deeper than this are no answer of this API (its deepest value lies five levels down). What
 * walks a body's values recursively — storableJson, the redaction, JSON.stringify — overflows the stack on a few
 * thousand levels, which a 20 kB body holds; such a body is refused by name instead (answers.ts `nestsTooDeep`).
 */
export const MAX_JSON_DEPTH = 100;

/**
 * The body as a ListBody when it is one whole top-level JSON array by its brackets and strings (a byte-order mark and
 * whitespace around it allowed, as answers.ts `parseJson` allows them); null otherwise — a truncated body, an object,
 * a page, items nested deeper than MAX_JSON_DEPTH — for the caller to classify the usual way. The elements themselves
 * are checked when read (see ListBody).
 */
export function scanListBody(bytes: Buffer): ListBody | null {
  const n = bytes.length;
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (isSpace(bytes[i])) i++;
  if (bytes[i] !== OPEN_ARRAY) return null;
  const start = i + 1;
  const commas: number[] = [];
  let depth = 1;
  let end = -1;
  for (i = start; i < n; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      i = closingQuote(bytes, i + 1);
      if (i < 0) return null;
    } else if (c === COMMA) {
      if (depth === 1) commas.push(i);
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > MAX_JSON_DEPTH) return null;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (--depth === 0) {
        // The array must close as it opened: `[{"id":"a"}}` is not JSON, though its one element is.
        if (c !== CLOSE_ARRAY) return null;
        end = i;
        break;
      }
    }
  }
  if (end < 0) return null;
  for (i = end + 1; i < n; i++) if (!isSpace(bytes[i])) return null;
  let empty = commas.length === 0;
  for (i = start; empty && i < end; i++) if (!isSpace(bytes[i])) empty = false;
  return ListBody.scanned(bytes, start, end, commas, empty ? 0 : commas.length + 1);
}

/** The offset of the quote that closes a string whose first byte is at `from`; -1 when the body ends first. */
function closingQuote(bytes: Buffer, from: number): number {
  for (let i = from; ; i++) {
    i = bytes.indexOf(QUOTE, i);
    if (i < 0) return -1;
    let backslashes = 0;
    while (bytes[i - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return i;
  }
}
