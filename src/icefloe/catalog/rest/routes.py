"""Paths of the REST catalog API (``/v1/{prefix}/...``) and how identifiers appear in them."""

from __future__ import annotations

from urllib.parse import quote

from icefloe.catalog.identifiers import Namespace

DEFAULT_SEPARATOR = "\x1f"


class Routes:
    """Builds request paths for one server configuration (prefix, namespace separator)."""

    def __init__(self, prefix: str | None = None, separator: str = DEFAULT_SEPARATOR) -> None:
        self.base = "/v1/" + (quote(prefix.strip("/"), safe="/") + "/" if prefix else "")
        self.separator = separator

    def namespace_param(self, namespace: Namespace) -> str:
        """A namespace as one query parameter value (levels joined by the separator)."""
        return self.separator.join(namespace)

    def _ns(self, namespace: Namespace) -> str:
        return quote(self.separator, safe="").join(quote(level, safe="") for level in namespace)

    def namespaces(self) -> str:
        """``/namespaces``"""
        return self.base + "namespaces"

    def namespace(self, namespace: Namespace) -> str:
        """``/namespaces/{namespace}``"""
        return f"{self.base}namespaces/{self._ns(namespace)}"

    def namespace_properties(self, namespace: Namespace) -> str:
        """``/namespaces/{namespace}/properties``"""
        return self.namespace(namespace) + "/properties"

    def tables(self, namespace: Namespace) -> str:
        """``/namespaces/{namespace}/tables``"""
        return self.namespace(namespace) + "/tables"

    def table(self, namespace: Namespace, name: str) -> str:
        """``/namespaces/{namespace}/tables/{table}``"""
        return f"{self.tables(namespace)}/{quote(name, safe='')}"

    def views(self, namespace: Namespace) -> str:
        """``/namespaces/{namespace}/views``"""
        return self.namespace(namespace) + "/views"

    def view(self, namespace: Namespace, name: str) -> str:
        """``/namespaces/{namespace}/views/{view}``"""
        return f"{self.views(namespace)}/{quote(name, safe='')}"

    def view_rename(self) -> str:
        """``/views/rename``"""
        return self.base + "views/rename"

    def register(self, namespace: Namespace) -> str:
        """``/namespaces/{namespace}/register``"""
        return self.namespace(namespace) + "/register"

    def rename(self) -> str:
        """``/tables/rename``"""
        return self.base + "tables/rename"

    def transactions(self) -> str:
        """``/transactions/commit``"""
        return self.base + "transactions/commit"
