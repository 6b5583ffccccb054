import { describe, expect, it } from 'vitest';
import { isWriteDataError, sqlStateOf } from '../../src/errors.ts';

/** A driver error as pg and PGlite throw it, wrapped as drizzle wraps it. */
function wrapped(code: string, message = 'refused'): Error {
  const cause = Object.assign(new Error(message), { code, severity: 'ERROR' });
  return Object.assign(new Error(`Failed query: insert into t values ($1)\nparams: secret`), { cause });
}

describe('sqlStateOf', () => {
  it('finds the SQLSTATE along the cause chain', () => {
    expect(sqlStateOf(wrapped('22021'))).toBe('22021');
    expect(sqlStateOf(Object.assign(new Error('x'), { code: '40P01' }))).toBe('40P01');
    expect(sqlStateOf(new Error('x', { cause: new Error('y', { cause: wrapped('P0001') }) }))).toBe('P0001');
  });

  it.each([
    ['a Node system error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE', syscall: 'write' })],
    ['a connection refused', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', errno: -111 })],
    ['a plain error', new Error('Connection terminated unexpectedly')],
    ['not an error', 'oops'],
  ])('is null for %s', (_, error) => {
    expect(sqlStateOf(error)).toBeNull();
  });
});

describe('isWriteDataError', () => {
  it.each([
    ['22021', true], // invalid byte sequence (a NUL)
    ['22P05', true], // unsupported Unicode escape in jsonb
    ['23505', true], // unique violation
    ['23503', true], // foreign key violation
    ['40P01', true], // deadlock: this transaction, this time
    ['54000', true], // a row too big for an index
    ['P0001', true], // a trigger's raise
    ['08006', false], // connection failure
    ['08003', false],
    ['57P01', false], // admin shutdown
    ['57014', false], // statement timeout
    ['53100', false], // disk full
    ['53300', false], // too many connections
    ['42P01', false], // the table is gone
    ['XX000', false],
  ])('%s → %s', (code, perTicket) => {
    expect(isWriteDataError(wrapped(code))).toBe(perTicket);
  });

  it('is false without a SQLSTATE (a lost connection, a bug)', () => {
    expect(isWriteDataError(new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(isWriteDataError(new TypeError('x is undefined'))).toBe(false);
  });
});
