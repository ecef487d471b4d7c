"""`http://cert.dlweb/`: the proxy's CA certificate, so browsers trust the archived HTTPS sites.

Only the certificate is ever sent, never the key: the file served is mitmproxy's
`mitmproxy-ca-cert.pem`, which holds the certificate alone.
"""

import html

from . import page
from .answer import Answer, HarborContext
from .request import HarborRequest

CERT_FILE = "mitmproxy-ca-cert.pem"


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    if request.path in ("/dlweb-ca.pem", "/dlweb-ca.crt"):
        pem = (context.ca_folder / CERT_FILE).read_bytes()
        return Answer(
            200,
            pem,
            "application/x-x509-ca-cert",
            [("Content-Disposition", 'attachment; filename="dlweb-ca.pem"')],
        )
    body = f"""<h1>Browsing archived HTTPS sites</h1>
<p>The archive answers HTTPS requests itself, with certificates signed by its own certificate
authority. Install <a href="/dlweb-ca.pem">the archive's CA certificate</a> once and trust it
for identifying websites:</p>
<ul>
<li>Firefox: Settings, Privacy &amp; Security, Certificates, View Certificates, Authorities,
Import.</li>
<li>Chromium and Chrome on Linux: Settings, Privacy and security, Security, Manage
certificates, Authorities, Import.</li>
<li>Programs: pass the file as the trusted CA bundle (curl <code>--cacert dlweb-ca.pem</code>,
Python <code>ssl.create_default_context(cafile="dlweb-ca.pem")</code>).</li>
</ul>
<p class="note">Trust it only for browsing this archive ({html.escape(request.host)}).</p>
"""
    return page.page("certificate", body)
