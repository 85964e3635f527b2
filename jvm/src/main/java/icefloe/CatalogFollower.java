package icefloe;

/**
 * The Python driver's side of {@link CatalogFollowers}: registers the {@code icefloe} Python data
 * source again when the session's {@code spark.icefloe.catalog.*} settings changed since it was
 * registered (implemented in {@code icefloe.spark.jvm_catalog}, called through py4j).
 */
public interface CatalogFollower {
  void follow();
}
