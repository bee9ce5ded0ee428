import { v7 } from 'uuid';

/** Time-ordered UUIDs (v7): primary keys that sort by creation, so keyset pagination on `id` is stable. */
export const newId = (): string => v7();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID.test(value);
