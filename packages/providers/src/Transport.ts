/**
 * Where an adapter may send credentials. A credentialed adapter requires `https://`, except for loopback
 * hosts (`127.0.0.0/8`, `::1`, `localhost`), unless the caller explicitly sets `allowInsecureHttp: true`.
 * The check runs when the adapter is constructed, before any traffic, and fails with a typed
 * `ProviderConfigError` whose message names the field.
 *
 * @since 0.1.0
 */
import { Either, Schema } from "effect"

/**
 * An adapter's configuration was refused at construction. `message` names the field and never contains
 * a credential.
 *
 * @example
 * ```ts
 * import { Transport } from "@rein/providers"
 *
 * const error = new Transport.ProviderConfigError({ field: "baseUrl", message: "baseUrl: Expected https://…" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class ProviderConfigError extends Schema.TaggedError<ProviderConfigError>()("ProviderConfigError", {
  field: Schema.String,
  message: Schema.String
}) {}

/**
 * Whether a URL host is a loopback address: `localhost`, `127.0.0.0/8` or `::1`.
 *
 * @example
 * ```ts
 * import { Transport } from "@rein/providers"
 *
 * Transport.isLoopbackHost("127.0.0.1") // true
 * Transport.isLoopbackHost("[::1]")     // true
 * Transport.isLoopbackHost("10.0.0.1")  // false
 * ```
 * @category predicates
 * @since 0.1.0
 */
export const isLoopbackHost = (hostname: string): boolean => {
  const host = hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1")
  if (host === "localhost" || host.endsWith(".localhost")) return true
  if (host === "::1" || host === "0:0:0:0:0:0:0:1") return true
  const v4 = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host)
  return v4 !== null && v4.slice(1).every((n) => Number(n) <= 255)
}

/**
 * Checks a base URL for an adapter: it must parse as `http:` or `https:`; when the adapter carries a
 * credential, plain `http:` is allowed only to a loopback host or with `allowInsecureHttp`.
 *
 * @example
 * ```ts
 * import { Transport } from "@rein/providers"
 *
 * Transport.checkBaseUrl("http://10.0.0.5/v1", { field: "baseUrl", credentialed: true, allowInsecureHttp: false })
 * // Left(ProviderConfigError: "baseUrl: a credential may only be sent over https:// …")
 * ```
 * @category checking
 * @since 0.1.0
 */
export const checkBaseUrl = (
  input: string,
  options: { readonly field: string; readonly credentialed: boolean; readonly allowInsecureHttp: boolean }
): Either.Either<URL, ProviderConfigError> => {
  let url: URL
  try {
    url = new URL(input)
  } catch {
    return Either.left(
      new ProviderConfigError({ field: options.field, message: `${options.field}: Expected an absolute http(s) URL` })
    )
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return Either.left(
      new ProviderConfigError({
        field: options.field,
        message: `${options.field}: Expected an http:// or https:// URL, actual protocol ${url.protocol}`
      })
    )
  }
  if (url.username !== "" || url.password !== "") {
    return Either.left(
      new ProviderConfigError({
        field: options.field,
        message: `${options.field}: credentials in the URL are refused; pass apiKey as a Redacted value`
      })
    )
  }
  if (url.protocol === "http:" && options.credentialed && !options.allowInsecureHttp && !isLoopbackHost(url.hostname)) {
    return Either.left(
      new ProviderConfigError({
        field: options.field,
        message: `${options.field}: a credential may only be sent over https:// (or plain http:// to a loopback ` +
          `host); ${url.host} is neither. Set allowInsecureHttp: true to override`
      })
    )
  }
  return Either.right(url)
}
