import { Redis } from 'ioredis';

/** True when a Redis server answers at `url` (tests that need one are skipped, with a warning, when none does). */
export async function redisReachable(url = 'redis://127.0.0.1:6379'): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}
