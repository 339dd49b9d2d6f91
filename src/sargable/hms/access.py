"""Who may talk to `sargable serve`: the TLS context of the listener (`--tls-cert`, `--tls-key`, and with
`--tls-client-ca` only clients with a certificate that CA signed) and the allow-list of client addresses
(`--allow CIDR,...`)."""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Iterable, Sequence

from sargable.errors import SargableError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def tls_context(cert: str, key: str | None = None, client_ca: str | None = None) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2 or later) from a PEM certificate chain and key; with `client_ca`, clients
    must present a certificate signed by it. Unreadable or mismatched files are a `SargableError` naming them."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise SargableError(
            f"--tls-cert {cert} / --tls-key {key or cert}: can't load the certificate and key ({exc})"
        ) from None
    if client_ca is not None:
        try:
            context.load_verify_locations(cafile=client_ca)
        except (OSError, ssl.SSLError) as exc:
            raise SargableError(f"--tls-client-ca {client_ca}: can't load the CA certificates ({exc})") from None
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def parse_networks(specs: Iterable[str]) -> tuple[Network, ...]:
    """Networks from CIDR texts (`10.0.0.0/8`, `192.168.1.7`, `::1`; commas separate several in one text)."""
    out = []
    for spec in specs:
        for part in spec.split(","):
            text = part.strip()
            if not text:
                continue
            try:
                out.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                raise SargableError(
                    f"--allow: {text!r} is not an address or a network (CIDR, e.g. 10.0.0.0/8)"
                ) from None
    if not out:
        raise SargableError("--allow needs at least one address or network (CIDR, e.g. 10.0.0.0/8)")
    return tuple(out)


def allowed(networks: Sequence[Network], address: str) -> bool:
    """Whether a peer address lies in one of `networks` (an IPv4-mapped IPv6 address counts as its IPv4 one)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in networks)
