package icefloe;

import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

import org.apache.spark.sql.SparkSession;

/**
 * Lets a read or write of the {@code icefloe} format see the catalog the session's conf names now.
 *
 * <p>The Python data source is a class registered with the session, holding the catalog settings
 * it was registered with; Spark hands its planning worker only the read's options, never the
 * session's conf. So {@link DefaultSource}, before it looks the Python class up, asks the session's
 * follower (registered by {@code icefloe.spark.session()}) to register it again if the settings
 * changed: {@code spark.conf.set("spark.icefloe.catalog.uri", ...)} then takes effect at the next
 * {@code spark.read.format("icefloe")}, not only at the next icefloe call.
 */
public final class CatalogFollowers {
  private static final Map<SparkSession, CatalogFollower> FOLLOWERS =
      Collections.synchronizedMap(new WeakHashMap<>());

  private CatalogFollowers() {}

  public static void register(SparkSession session, CatalogFollower follower) {
    FOLLOWERS.put(session, follower);
  }

  /** Re-register the active session's data source if its catalog settings changed. */
  static void follow() {
    CatalogFollower follower = FOLLOWERS.get(SparkSession.active());
    if (follower != null) {
      follower.follow();
    }
  }
}
