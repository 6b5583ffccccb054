import { describe, expect, it } from 'vitest';
import { copyFailMessage, errorResponse, invalidFrontendMessage, ReadyForQueryTracker, SYNC_MESSAGE } from '../../src/db/pgWire.ts';

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
