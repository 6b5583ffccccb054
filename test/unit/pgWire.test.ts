import { describe, expect, it } from 'vitest';
import { blankLiterals, copyFailMessage, errorResponse, FrontendMessageLengths, invalidFrontendMessage, PROTOCOL_3_0, ReadyForQueryTracker, SYNC_MESSAGE, unservableCopy } from '../../src/db/pgWire.ts';

describe('ReadyForQueryTracker', () => {
  it('finds the status of the last ReadyForQuery across arbitrary chunk boundaries', () => {
    const stream = Buffer.concat([
      Buffer.from(errorResponse('ERROR', '42P01', 'relation "x" does not exist')),
      Buffer.from([0x5a, 0, 0, 0, 5, 0x45]), // Z 'E'
      Buffer.from([0x43, 0, 0, 0, 13, ...Buffer.from('ROLLBACK\0')]), // CommandComplete
      Buffer.from([0x5a, 0, 0, 0, 5, 0x49]), // Z 'I'
    ]);
    for (const size of [1, 2, 3, 7, stream.length]) {
      const tracker = new ReadyForQueryTracker();
      const statuses: string[] = [];
      for (let i = 0; i < stream.length; i += size) {
        const before = tracker.count;
        tracker.push(stream.subarray(i, i + size));
        if (tracker.count > before) statuses.push(tracker.status!);
      }
      expect(statuses).toEqual(size === stream.length ? ['I'] : ['E', 'I']);
      expect(tracker.count).toBe(2);
    }
  });
});

describe('invalidFrontendMessage', () => {
  const typed = (type: string, length: number, body = '') => Buffer.concat([Buffer.from(type, 'latin1'), Buffer.from([length >>> 24, (length >>> 16) & 0xff, (length >>> 8) & 0xff, length & 0xff]), Buffer.from(body)]);
  it('lets the protocol\'s own messages through', () => {
    expect(invalidFrontendMessage(typed('Q', 13, 'select 1\0'))).toBe(null);
    expect(invalidFrontendMessage(SYNC_MESSAGE)).toBe(null);
    expect(invalidFrontendMessage(copyFailMessage('gone'))).toBe(null);
  });
  it('names a type PostgreSQL does not have, or a length that does not add up', () => {
    expect(invalidFrontendMessage(typed('z', 4))).toBe('invalid frontend message type 122');
    expect(invalidFrontendMessage(typed('p', 10, 'secret'))).toBe('invalid frontend message type 112');
    expect(invalidFrontendMessage(typed('Q', 2).subarray(0, 3))).toBe('invalid message length');
    expect(invalidFrontendMessage(typed('Q', -5, 'select 1'))).toBe('invalid message length');
    expect(invalidFrontendMessage(Buffer.from('Q'))).toBe('invalid message length');
  });
});

describe('unservableCopy', () => {
  const frame = (type: string, ...parts: string[]) => {
    const body = Buffer.concat(parts.map((p) => Buffer.from(`${p}\0`, 'utf8')));
    const length = Buffer.alloc(4);
    length.writeInt32BE(body.length + 4);
    return new Uint8Array(Buffer.concat([Buffer.from(type, 'latin1'), length, body]));
  };
  it.each([
    ['copy reply_outbox (ticket_id, message) from stdin', true],
    ['COPY reply_outbox FROM STDIN WITH (FORMAT csv)', true],
    ['  /* a /* nested */ comment */ copy x from\n  stdin', true],
    ["copy (select 1) to program 'id'", 'program'],
    ["COPY t FROM PROGRAM 'echo hi'", 'program'],
    ["select 1; copy t to\n program 'x'", 'program'],
    ["select 'copy t to program x'", false],
    ['select 1; copy x from stdin', true],
    ['copy x to stdout', false],
    ["copy (select 'from stdin') to stdout", false],
    ["insert into reply_outbox (ticket_id, message) values ('t1', 'copy the file from stdin, then')", false],
    ["insert into reply_outbox values ('t1', 'it''s; copy x from stdin')", false],
    ["select E'it\\'s; copy x from stdin'", false],
    ['select $$; copy x from stdin$$', false],
    ['select $q$; copy x from stdin$q$', false],
    ['select "; copy x from stdin" from t', false],
    ['-- copy x from stdin\nselect 1', false],
    ['select 1 -- ; copy x from stdin', false],
  ])('a Query of %j: %s', (text, expected) => {
    expect(unservableCopy(frame('Q', text))).toBe(expected === true ? 'stdin' : expected === false ? null : expected);
  });

  it('reads the statement of a Parse message, after its name', () => {
    expect(unservableCopy(frame('P', 'stmt1', 'copy x from stdin'))).toBe('stdin');
    expect(unservableCopy(frame('P', '', "copy x to program 'id'"))).toBe('program');
    expect(unservableCopy(frame('P', 'copy x from stdin', 'select 1'))).toBe(null);
    expect(unservableCopy(frame('B', '', 'copy x from stdin'))).toBe(null);
  });

  it('blanks literals, quoted names and comments, keeping every other character in place', () => {
    const sql = `select 'a''b', E'c\\'d', "e""f", $t$g$t$ /* h /* i */ j */ -- k\nfrom x`;
    const blanked = blankLiterals(sql);
    expect(blanked).toHaveLength(sql.length);
    expect(blanked.replace(/ +/g, ' ')).toBe('select , E , , \nfrom x');
  });
});

describe('FrontendMessageLengths', () => {
  const untyped = (code: number, body: Buffer = Buffer.alloc(0)) => {
    const b = Buffer.alloc(8);
    b.writeInt32BE(8 + body.length, 0);
    b.writeInt32BE(code, 4);
    return Buffer.concat([b, body]);
  };
  const typed = (type: string, body: Buffer) => {
    const b = Buffer.alloc(5);
    b.write(type, 0, 'latin1');
    b.writeInt32BE(4 + body.length, 1);
    return Buffer.concat([b, body]);
  };
  const query = (text: string) => typed('Q', Buffer.from(`${text}\0`));
  const stream = Buffer.concat([
    untyped(80877103), // SSLRequest (answered N)
    untyped(PROTOCOL_3_0, Buffer.from('user\0postgres\0\0')),
    typed('p', Buffer.alloc(100)),
    query('select 1'),
    query(`select '${'x'.repeat(1000)}'`),
    query('select 2'),
  ]);

  it.each([1, 3, 7, 64, stream.length])('finds the one message over the limit, the stream cut in chunks of %i bytes', (size) => {
    const lengths = new FrontendMessageLengths();
    const found: number[] = [];
    for (let i = 0; i < stream.length; i += size) {
      const over = lengths.push(stream.subarray(i, i + size), 500);
      if (over !== null) found.push(over);
    }
    expect(found).toEqual([4 + 'select \'\''.length + 1000 + 1]);
  });

  it('finds nothing when every message fits', () => {
    expect(new FrontendMessageLengths().push(stream, 2000)).toBeNull();
  });
});
