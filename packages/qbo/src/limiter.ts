import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * QBO's limits per company: 500 requests a minute and 10 at once. `acquire` waits for a slot and answers the
 * function that gives it back. With Redis, every process shares the counts (a sorted set of leases and one of
 * request times per company, changed atomically by one script); without it, the counts are this process's.
 */
export interface QboLimiter {
  acquire(realmId: string): Promise<() => void>;
}

export const QBO_LIMITS = { perMinute: 500, concurrent: 10 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function inProcessLimiter(limits = QBO_LIMITS): QboLimiter {
  const state = new Map<string, { running: number; starts: number[]; waiting: (() => void)[] }>();
  const of = (realmId: string) => {
    let s = state.get(realmId);
    if (!s) {
      s = { running: 0, starts: [], waiting: [] };
      state.set(realmId, s);
    }
    return s;
  };
  return {
    async acquire(realmId) {
      const s = of(realmId);
      for (;;) {
        const now = Date.now();
        while (s.starts.length > 0 && (s.starts[0] as number) <= now - 60_000) s.starts.shift();
        if (s.running < limits.concurrent && s.starts.length < limits.perMinute) break;
        if (s.running >= limits.concurrent) await new Promise<void>((resolve) => s.waiting.push(resolve));
        else await sleep((s.starts[0] as number) + 60_000 - now);
      }
      s.running++;
      s.starts.push(Date.now());
      let released = false;
      return () => {
        if (released) return;
        released = true;
        s.running--;
        s.waiting.shift()?.();
      };
    },
  };
}

/** Takes a slot when both sets have room: KEYS leases, starts; ARGV now, lease id, lease ms, per minute, concurrent. */
const ACQUIRE = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return 0 - (tonumber(oldest[2]) + 60000 - now)
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], 120000)
redis.call('PEXPIRE', KEYS[2], 120000)
return 0`;

/**
 * The limits shared through Redis by every process. A lease expires after `leaseMs` (a process that died holding
 * one does not keep the slot); waiting polls, which is enough at ten slots a company.
 */
export function redisLimiter(redis: Redis, limits = QBO_LIMITS, leaseMs = 120_000): QboLimiter {
  // When Redis cannot answer, this process keeps to the limits on its own rather than stopping every call.
  const fallback = inProcessLimiter(limits);
  return {
    async acquire(realmId) {
      const id = randomUUID();
      const keys = [`qbo:limit:${realmId}:leases`, `qbo:limit:${realmId}:starts`];
      for (;;) {
        let answer: number;
        try {
          answer = Number(
            await redis.eval(ACQUIRE, 2, ...keys, Date.now(), id, leaseMs, limits.perMinute, limits.concurrent),
          );
        } catch {
          return fallback.acquire(realmId);
        }
        if (answer === 0) break;
        await sleep(answer < 0 ? Math.min(-answer, 1000) : 25 + Math.random() * 25);
      }
      return () => {
        void redis.zrem(keys[0] as string, id).catch(() => {});
      };
    },
  };
}
