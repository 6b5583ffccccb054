import { DrizzleQueryError } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { DatabaseError, isWriteDataError, safeError, safeErrorMessage, sqlStateOf } from '../../src/errors.ts';

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

/** What drizzle throws: its message lists the query and every bound parameter. */
function drizzleError(cause: unknown): DrizzleQueryError {
  return new DrizzleQueryError('insert into messages (id, message) values ($1, $2)', ['m1', 'Dear support, my card 4111 …'], cause as Error);
}
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code, detail: 'Key (id)=(m1) …' });

describe('safeErrorMessage', () => {
  it("tells the database's message and SQLSTATE, never drizzle's parameters", () => {
    const told = safeErrorMessage(drizzleError(pgError('P0001', 'refused by the test trigger')));
    expect(told).toBe('refused by the test trigger (SQLSTATE P0001)');
  });

  it.each([
    ['22P02', 'invalid input syntax for type integer: "Dear support"', 'invalid input syntax for type integer: "…" (SQLSTATE 22P02)'],
    ['22003', 'value "99999999999 Dear" is out of range for type integer', 'value "…" is out of range for type integer (SQLSTATE 22003)'],
    ['22021', 'invalid byte sequence for encoding "UTF8": 0x00', 'invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)'],
    ['23505', 'duplicate key value violates unique constraint "messages_pkey"', 'duplicate key value violates unique constraint "messages_pkey" (SQLSTATE 23505)'],
  ])('drops the values a data exception quotes (%s)', (code, message, told) => {
    expect(safeErrorMessage(drizzleError(pgError(code, message)))).toBe(told);
  });

  it("tells a lost connection by the driver's message", () => {
    expect(safeErrorMessage(drizzleError(new Error('Connection terminated unexpectedly')))).toBe('Connection terminated unexpectedly');
    expect(safeErrorMessage(new DrizzleQueryError('select $1', ['secret'], undefined as unknown as Error))).toBe('a database query failed');
  });

  it('leaves any other error as it is', () => {
    expect(safeErrorMessage(new Error('the API answered 500'))).toBe('the API answered 500');
    expect(safeErrorMessage('oops')).toBe('oops');
  });
});

describe('safeError', () => {
  it('turns a database error into a DatabaseError with context, SQLSTATE and the frames, not the parameters', () => {
    const original = drizzleError(pgError('53100', 'could not extend file: No space left on device'));
    const e = safeError(original, 'ticket Ab12');
    expect(e).toBeInstanceOf(DatabaseError);
    expect(e).toMatchObject({ name: 'DatabaseError', sqlState: '53100', message: 'ticket Ab12: could not extend file: No space left on device (SQLSTATE 53100)' });
    expect(e.cause).toBeUndefined();
    expect(e.stack).toMatch(/^DatabaseError: ticket Ab12: could not extend file/);
    expect(e.stack).toMatch(/\n\s+at /);
    expect(`${e.stack} ${JSON.stringify(e)}`).not.toMatch(/Dear support|params|insert into/);
  });

  it('returns any other error unchanged', () => {
    const e = new TypeError('x is undefined');
    expect(safeError(e, 'ticket Ab12')).toBe(e);
  });
});
