export { createQboPlatform } from './adapter';
export { qboConfigFrom } from './config';
export type { QboConfig } from './config';
export { QboHttp } from './http';
export { inProcessLimiter, redisLimiter } from './limiter';
export type { QboLimiter } from './limiter';
export { completeAuthorization, startAuthorization } from './oauth';
export { disconnect, getConnection, listConnections, resealTokens } from './tokens';
export type { QboConnection } from './tokens';
