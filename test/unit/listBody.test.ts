import { describe, expect, it } from 'vitest';
import { nestsTooDeep } from '../../src/api/answers.ts';
import { ListBody, MAX_JSON_DEPTH, scanListBody } from '../../src/api/listBody.ts';
import { InvalidResponseError } from '../../src/errors.ts';

/** A list's body read in batches gives what JSON.parse gives, or refuses what JSON.parse refuses. */

const bytes = (text: string) => Buffer.from(text, 'utf8');
const read = (body: ListBody, size: number) => [...body.batches(size)];

const AWKWARD = [
  { id: 'a', name: 'say "hi", [then] {leave}', email: 'back\\slash\\', status: 'open' },
  { id: 'b', name: 'Zoë 王芳 🚀 \u2028', nested: { list: [1, [2, { x: ']' }]], empty: {} }, has_unread_messages: true },
  { id: 'c', name: '\\"', email: null, n: -1.5e3 },
  { id: 'd', quote: '"', comma: ',', brace: '}' },
  { id: 'e' },
];

describe('scanListBody', () => {
  it.each([1, 2, 3, 5, 100])('reads a body in batches of %i as JSON.parse reads it whole', (size) => {
    const text = JSON.stringify(AWKWARD, null, size === 2 ? 2 : undefined);
    const body = scanListBody(bytes(text))!;
    expect(body.length).toBe(AWKWARD.length);
    const batches = read(body, size);
    expect(batches.map((b) => b.length)).toEqual(
      Array.from({ length: Math.ceil(AWKWARD.length / size) }, (_, i) => Math.min(size, AWKWARD.length - i * size)),
    );
    expect(batches.flat()).toEqual(JSON.parse(text));
    expect(body.all()).toEqual(JSON.parse(text));
  });

  it('allows a byte-order mark and whitespace around the array, and an empty array', () => {
    expect(scanListBody(bytes('\uFEFF \n[ {"id":"a"} ,\t{"id":"b"} ]\r\n'))!.all()).toEqual([{ id: 'a' }, { id: 'b' }]);
    for (const empty of ['[]', ' [ \n ] ', '\uFEFF[]']) {
      const body = scanListBody(bytes(empty))!;
      expect(body.length).toBe(0);
      expect(read(body, 10)).toEqual([]);
    }
  });

  it('keeps what is not one whole array for the usual classification (null)', () => {
    const text = JSON.stringify(AWKWARD);
    for (const cut of [1, 10, text.length / 2, text.length - 1]) expect(scanListBody(bytes(text.slice(0, cut)))).toBeNull();
    for (const other of ['', '  ', '{"data":[]}', 'null', '<!doctype html><html></html>', '[1] [2]', '[1],', '[1]x', '"[1]"', '[{"a":"unterminated]', '[{"id":"a"}}', '[1,2}']) {
      expect(scanListBody(bytes(other)), other).toBeNull();
    }
  });

  it.each([
    ['an empty element', '[{"id":"a"},,{"id":"b"}]'],
    ['a trailing comma', '[{"id":"a"},{"id":"b"},]'],
    ['a bad literal', '[{"id":"a"},{"id":"b","x":tru}]'],
    ['brackets that do not match', '[{"id":"a"},{"id":"b","x":[1}]]'],
    ['a raw control character in a string', '[{"id":"a"},{"id":"b\u0001"}]'],
    ['two values in one element', '[{"id":"a"},{"id":"b"} {"id":"c"}]'],
  ])('refuses %s when its batch is read, after the batches before it', (_what, text) => {
    expect(() => JSON.parse(text)).toThrow();
    const batches = scanListBody(bytes(text))!.batches(1);
    expect(batches.next().value).toEqual([{ id: 'a' }]);
    expect(() => [...batches]).toThrow(InvalidResponseError);
  });

  it('refuses a leading comma at the first batch', () => {
    expect(() => scanListBody(bytes('[,{"id":"a"}]'))!.all()).toThrow(InvalidResponseError);
  });

  it('decodes invalid UTF-8 as a text body is decoded (U+FFFD)', () => {
    const raw = Buffer.concat([bytes('[{"id":"a","name":"'), Buffer.from([0xff, 0xfe]), bytes('"}]')]);
    expect(scanListBody(raw)!.all()).toEqual(JSON.parse(raw.toString('utf8')));
  });

  it(`keeps JSON nested deeper than ${MAX_JSON_DEPTH} levels, the list's own bracket counted, for answers.ts to refuse`, () => {
    const nested = (levels: number) => `[{"id":"a","x":${'['.repeat(levels - 2)}"[{"${']'.repeat(levels - 2)}}]`;
    expect(scanListBody(bytes(nested(MAX_JSON_DEPTH)))!.all()).toEqual(JSON.parse(nested(MAX_JSON_DEPTH)));
    expect(nestsTooDeep(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(scanListBody(bytes(nested(MAX_JSON_DEPTH + 1)))).toBeNull();
    expect(nestsTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    // Brackets inside strings, escaped quotes included, are text.
    expect(nestsTooDeep(JSON.stringify({ x: `\\"${'['.repeat(1000)}` }))).toBe(false);
  });

  it('serves an array already parsed the same way', () => {
    expect(read(ListBody.of(AWKWARD), 2)).toEqual([AWKWARD.slice(0, 2), AWKWARD.slice(2, 4), AWKWARD.slice(4)]);
  });
});
