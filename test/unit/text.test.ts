import { describe, expect, it } from 'vitest';
import { storableJson, storableText } from '../../src/text.ts';

describe('storableText', () => {
  it.each([
    ['plain', 'Zoë Ångström', 'Zoë Ångström'],
    ['a NUL', 'a\u0000b', 'a\ufffdb'],
    ['a lone high surrogate', 'x\ud83d', 'x\ufffd'],
    ['a lone low surrogate', '\udc00y', '\ufffdy'],
    ['a high surrogate before a non-surrogate', '\ud83dA', '\ufffdA'],
    ['two high surrogates then a low one', '\ud83d\ud83d\ude00', '\ufffd\ud83d\ude00'],
    ['a reversed pair', '\ude00\ud83d', '\ufffd\ufffd'],
    ['a valid pair (emoji) kept', 'ok 😀', 'ok 😀'],
    ['each refused unit on its own', '\u0000\u0000\ud800', '\ufffd\ufffd\ufffd'],
    ['other control characters kept', 'tab\tline\nbell\u0007', 'tab\tline\nbell\u0007'],
  ])('%s', (_, input, expected) => {
    expect(storableText(input)).toBe(expected);
    // What comes out survives a UTF-8 round trip unchanged: PostgreSQL stores it as given.
    expect(Buffer.from(storableText(input), 'utf8').toString('utf8')).toBe(expected);
    expect(storableText(input)).not.toMatch(/\u0000/);
  });
});

describe('storableJson', () => {
  it('replaces in every string, nested, object keys included, and keeps every other value', () => {
    const body = {
      'na\u0000me': 'Zo\ud83d',
      n: 1,
      b: false,
      z: null,
      assigned_to: { id: 'u1', name: 'Agent \udc00' },
      messages: [{ message: 'hi\u0000', user: { name: 'x\ud83d' }, attachments: [{ name: 'f\u0000.pdf', size: 3 }] }],
    };
    expect(storableJson(body)).toEqual({
      'na\ufffdme': 'Zo\ufffd',
      n: 1,
      b: false,
      z: null,
      assigned_to: { id: 'u1', name: 'Agent \ufffd' },
      messages: [{ message: 'hi\ufffd', user: { name: 'x\ufffd' }, attachments: [{ name: 'f\ufffd.pdf', size: 3 }] }],
    });
    // The input is left as it was.
    expect(body.messages[0]!.message).toBe('hi\u0000');
  });

  it('returns the very same value when nothing needs replacing', () => {
    const body = { a: 'x', b: [{ c: 'y 😀' }], d: 3 };
    expect(storableJson(body)).toBe(body);
  });

  it('what it returns is valid for jsonb: JSON.stringify escapes no NUL and no lone surrogate', () => {
    const text = JSON.stringify(storableJson({ ['k\ud800']: ['\u0000', '\udfff', { x: 'a\ud83d' }] }));
    expect(text).not.toMatch(/\\u0000|\\ud[89a-f][0-9a-f]{2}/i);
  });
});
