import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

/** Random bytes drawn in blocks, sixteen per id: one call into the system's generator per 256 ids, not per id. */
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

function randomBytes16(): Uint8Array {
  if (offset + 16 > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + 16);
  offset += 16;
  return bytes;
}

/** The clock and counter of the last id, as uuid's own v7 keeps them: ids made in one millisecond still sort. */
const state = { msecs: -Infinity, seq: 0 };

/** Time-ordered UUIDs (v7): primary keys that sort by creation, so keyset pagination on `id` is stable. */
export const newId = (): string => {
  const random = randomBytes16();
  const now = Date.now();
  if (now > state.msecs) {
    // A fresh 31-bit counter from the random bytes, as uuid's own v7 draws it, so the first id of a millisecond is unguessable.
    state.seq =
      (((random[6] as number) & 0x7f) << 24) |
      ((random[7] as number) << 16) |
      ((random[8] as number) << 8) |
      (random[9] as number);
    state.msecs = now;
  } else {
    state.seq = (state.seq + 1) | 0;
    if (state.seq === 0) state.msecs++;
  }
  return v7({ random, msecs: state.msecs, seq: state.seq });
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID.test(value);
