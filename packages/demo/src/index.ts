export { DEMO_FIRM_SLUG, DEMO_OWNER_EMAIL, seedDemo } from './seed';
export type { SeedResult } from './seed';
