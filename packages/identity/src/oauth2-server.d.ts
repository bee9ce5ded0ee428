/**
 * Types for the one internal module of @node-oauth/oauth2-server that we extend: its authorization
 * code grant, subclassed in oauth-server.ts to make PKCE mandatory and a redirect mismatch an
 * invalid_grant. The package ships types for its public entry point only.
 */
declare module '@node-oauth/oauth2-server/lib/grant-types/authorization-code-grant-type.js' {
  import OAuth2Server from '@node-oauth/oauth2-server';

  class AuthorizationCodeGrantType extends OAuth2Server.AbstractGrantType {
    handle(request: OAuth2Server.Request, client: OAuth2Server.Client): Promise<OAuth2Server.Token>;
    verifyPKCE(request: OAuth2Server.Request, code: OAuth2Server.AuthorizationCode): void;
    validateRedirectUri(request: OAuth2Server.Request, code: OAuth2Server.AuthorizationCode): void;
  }
  export = AuthorizationCodeGrantType;
}
