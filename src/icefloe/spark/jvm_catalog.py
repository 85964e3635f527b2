"""The data source follows ``spark.icefloe.catalog.*`` at once, when icefloe's jar is loaded.

The ``icefloe`` Python data source is a class registered with the session; it carries the catalog
settings it was registered with (``datasource.datasource_class``), and Spark gives its planning
worker the read's options and nothing of the session's conf. So a ``spark.conf.set`` of a catalog
setting reached the data source only when an icefloe call or statement registered it again
(``runtime.resolve_catalog``). With the jar, ``icefloe.DefaultSource`` (the class ``format("icefloe")``
resolves to) calls :class:`CatalogFollower` through py4j before it looks the Python class up, once
per read or write: the data source is registered again right then if the settings changed, so the
read plans against the catalog the conf names now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from icefloe.spark.runtime import follow_catalog_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class CatalogFollower:
    """Registers ``spark``'s data source again when its catalog conf changed (a py4j callback of
    ``icefloe.CatalogFollowers``, run on the driver)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def follow(self) -> None:
        """Re-register the data source if ``spark.icefloe.catalog.*`` differs from its registration."""
        follow_catalog_conf(self.spark)

    class Java:
        implements: ClassVar[list[str]] = ["icefloe.CatalogFollower"]


def register_follower(spark: SparkSession) -> bool:
    """Have ``icefloe.DefaultSource`` ask ``spark``'s follower before each read or write.

    False when the jar predates the follower (``scripts/build_jar.py`` rebuilds it when its
    sources change): the data source then follows the conf at the next icefloe call, as without
    the jar, rather than the session failing to start.
    """
    from py4j.java_gateway import JavaClass

    jvm: Any = spark.sparkContext._jvm
    followers = jvm.icefloe.CatalogFollowers
    if not isinstance(followers, JavaClass):  # py4j's stand-in for a class it cannot find
        return False
    followers.register(spark._jsparkSession, CatalogFollower(spark))
    return True
