import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.view.View;

/**
 * RESTCatalog client options against the server: a path prefix from /v1/config, a static bearer
 * token, an explicit oauth2-server-uri, lazy snapshot loading (snapshots=refs), names that need
 * URL encoding, and view updates (properties, a new version, location).
 */
final class ClientOptionSteps {
  private static final Schema ONE = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  private final JavaRestDriver driver;

  ClientOptionSteps(JavaRestDriver driver) {
    this.driver = driver;
  }

  private Map<String, String> props(String uriKey, String key, String value) {
    Map<String, String> props = new HashMap<>();
    props.put("uri", driver.inputs.get(uriKey).asText());
    props.put(key, value);
    return props;
  }

  private String credential() {
    return driver.inputs.get("credential").asText();
  }

  void run() {
    TableIdentifier events = TableIdentifier.of("jns", "events");
    JavaRestDriver.step("prefixed_server", () -> {
      try (RESTCatalog rest = JavaRestDriver.connect(props("prefixed_uri", "credential", credential()))) {
        Table t = rest.loadTable(events);
        t.updateProperties().set("via", "prefix").commit();
        return Map.of("namespaces", JavaRestDriver.names(rest.listNamespaces()),
            "via", driver.catalog.loadTable(events).properties().get("via"));
      }
    });
    JavaRestDriver.step("bearer_token", () -> {
      try (RESTCatalog rest = JavaRestDriver.connect(props("uri", "token", driver.inputs.get("token").asText()))) {
        return JavaRestDriver.value(JavaRestDriver.names(rest.listTables(Namespace.of("ice"))));
      }
    });
    JavaRestDriver.step("oauth2_server_uri", () -> {
      Map<String, String> props = props("uri", "credential", credential());
      props.put("oauth2-server-uri", driver.inputs.get("uri").asText() + "/v1/oauth/tokens");
      props.put("scope", "catalog");
      try (RESTCatalog rest = JavaRestDriver.connect(props)) {
        return JavaRestDriver.value(rest.namespaceExists(Namespace.of("jns")));
      }
    });
    JavaRestDriver.step("snapshot_loading_refs", () -> {
      Map<String, String> props = props("uri", "credential", credential());
      props.put("snapshot-loading-mode", "refs");
      try (RESTCatalog rest = JavaRestDriver.connect(props)) {
        Table t = rest.loadTable(events);
        return Map.of("current", t.currentSnapshot().snapshotId() == driver.catalog.loadTable(events).currentSnapshot().snapshotId(),
            "snapshots", JavaRestDriver.size(t.snapshots()),
            "all", JavaRestDriver.size(driver.catalog.loadTable(events).snapshots()));
      }
    });
    JavaRestDriver.step("encoded_names", () -> {
      Namespace ns = Namespace.of("odd ns", "a+b%c");
      driver.catalog.createNamespace(Namespace.of("odd ns"), new HashMap<>());
      driver.catalog.createNamespace(ns, new HashMap<>(Map.of("p q", "r/s")));
      TableIdentifier id = TableIdentifier.of(ns, "t 1+x%2F");
      driver.catalog.createTable(id, ONE, PartitionSpec.unpartitioned(), new HashMap<>());
      TableIdentifier renamed = TableIdentifier.of(ns, "t 2 ü");
      driver.catalog.renameTable(id, renamed);
      Map<String, Object> out = Map.of(
          "namespaces", JavaRestDriver.names(driver.catalog.listNamespaces(Namespace.of("odd ns"))),
          "properties", driver.catalog.loadNamespaceMetadata(ns),
          "tables", JavaRestDriver.names(driver.catalog.listTables(ns)),
          "loaded", driver.catalog.loadTable(renamed).name());
      driver.catalog.dropTable(renamed, true);
      driver.catalog.dropNamespace(ns);
      driver.catalog.dropNamespace(Namespace.of("odd ns"));
      return out;
    });
    JavaRestDriver.step("dotted_namespace_level", () -> {
      driver.catalog.createNamespace(Namespace.of("dot.ted"), new HashMap<>());
      return Map.of("exists", driver.catalog.namespaceExists(Namespace.of("dot.ted")),
          "nested_exists", driver.catalog.namespaceExists(Namespace.of("dot", "ted")),
          "top", JavaRestDriver.names(driver.catalog.listNamespaces()));
    });
    JavaRestDriver.step("metadata_table", () -> {
      Table snapshots = driver.catalog.loadTable(TableIdentifier.of("jns", "events", "snapshots"));
      Table files = driver.catalog.loadTable(TableIdentifier.of("jns", "events", "files"));
      return Map.of("snapshots", snapshots.name(), "files_schema", files.schema().findField("file_path") != null);
    });
    JavaRestDriver.step("warehouse_config", () -> {
      Map<String, String> props = props("uri", "credential", credential());
      props.put("warehouse", driver.inputs.get("warehouse").asText());
      try (RESTCatalog rest = JavaRestDriver.connect(props)) {
        return JavaRestDriver.value(rest.tableExists(TableIdentifier.of("jns", "events")));
      }
    });
    JavaRestDriver.step("view_updates", () -> {
      TableIdentifier id = TableIdentifier.of("jns", "v_updates");
      View view = driver.catalog.buildView(id).withSchema(ONE).withDefaultNamespace(Namespace.of("jns"))
          .withQuery("spark", "SELECT 1 AS id").createOrReplace();
      view.updateProperties().set("owner", "java").commit();
      view.replaceVersion().withSchema(ONE).withDefaultNamespace(Namespace.of("jns"))
          .withQuery("spark", "SELECT 2 AS id").commit();
      view.updateLocation().setLocation(driver.inputs.get("warehouse").asText() + "/views/v_updates").commit();
      View loaded = driver.catalog.loadView(id);
      Map<String, Object> out = Map.of("owner", loaded.properties().get("owner"), "sql", loaded.sqlFor("spark").sql(),
          "version", loaded.currentVersion().versionId(),
          "location", loaded.location().equals(driver.inputs.get("warehouse").asText() + "/views/v_updates"));
      driver.catalog.dropView(id);
      return out;
    });
  }
}
