export { authenticateApiKey, createApiKey, getApiKey, listApiKeys, revokeApiKey } from './api-keys';
export type { ApiKeyListing, ApiKeyLookup } from './api-keys';
export { canSeeOrganization } from './credentials';
export type { Credential } from './credentials';
export { LookupCache } from './lookup-cache';
export { findVisibleOrganization, listOrganizations } from './organizations';
export type { Organization } from './organizations';
export { generatePassword, hashPassword } from './passwords';
export { generateSecret, hashSecret, safeEqual } from './secrets';
export {
  checkAuthorizationRequest,
  codeRedirect,
  consentContext,
  errorRedirect,
  isOurResource,
  mayRedirectErrors,
  parseScopes,
} from './oauth-authorize';
export type { AuthorizationCheck, AuthorizationParams, AuthorizationRequest } from './oauth-authorize';
export {
  authenticateOAuthClient,
  createOAuthClient,
  findOAuthClient,
  redirectUriProblem,
  revokeOAuthClient,
} from './oauth-clients';
export type { OAuthClient } from './oauth-clients';
export { createOAuthServer, decodeBasicCredentials, isOAuthError } from './oauth-server';
export {
  agentNames,
  agentOfCredential,
  authenticateAccessToken,
  disconnect,
  isAgentOfFirm,
  listConnections,
  revokeTokenOfClient,
} from './oauth-tokens';
export {
  canApproveApps,
  canManageApps,
  createSession,
  findSession,
  normalizeEmail,
  revokeSession,
  sessionCredential,
  verifyLogin,
} from './sessions';
export type { Session, SessionUser, UserRole } from './sessions';
export { createFirm, createFirmIfNew, findFirm, firmIdOfSlug, hasFirms } from './firms';
export {
  acceptInvitation,
  createFirmOwner,
  createUser,
  deactivateUser,
  findInvitation,
  firmOfUser,
  firmUserByEmail,
  getUser,
  inviteUser,
  listUsers,
  managerRoleOf,
  MIN_PASSWORD_LENGTH,
  reissueInvitation,
  updateUser,
  USER_ROLES,
} from './users';
export type { FirmUser, Invitation, InvitationState, Manager } from './users';
