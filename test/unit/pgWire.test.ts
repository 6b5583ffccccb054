import { describe, expect, it } from 'vitest';
import { errorResponse, ReadyForQueryTracker } from '../../src/db/pgWire.ts';

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
