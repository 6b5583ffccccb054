import { describe, expect, it } from 'vitest';
import { boolArray, textArray } from '../../src/db/repos/rows.ts';

describe('array literals', () => {
  it('quote every text value and escape quotes and backslashes; null is NULL', () => {
    expect(textArray([])).toBe('{}');
    expect(textArray(['a', 'NULL', ' b ', '{c,d}'])).toBe('{"a","NULL"," b ","{c,d}"}');
    expect(textArray(['say "hi"', 'back\\slash', null])).toBe('{"say \\"hi\\"","back\\\\slash",NULL}');
  });

  it('write booleans as t and f', () => {
    expect(boolArray([true, false, null])).toBe('{t,f,NULL}');
    expect(boolArray([])).toBe('{}');
  });
});
