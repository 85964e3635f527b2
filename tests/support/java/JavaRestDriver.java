import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.view.View;

/**
 * Drives Iceberg Java's real {@link RESTCatalog} through a scripted scenario against one server.
 *
 * <p>Usage: {@code JavaRestDriver INPUTS.json}. The inputs name the server URI, the OAuth2
 * credentials and the Parquet files the Python test wrote (path, size, record count, id bounds).
 * Every step prints one JSON line {@code {"step": NAME, ...}}; a step that throws prints {@code
 * {"step": NAME, "error": ExceptionSimpleName}} and the scenario goes on, so the Python test sees
 * every outcome and asserts each exactly.
 */
public class JavaRestDriver {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Namespace NS = Namespace.of("jns");
  private static final Schema EVENTS =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get()),
          Types.NestedField.optional(3, "qty", Types.IntegerType.get()),
          Types.NestedField.optional(4, "flag", Types.BooleanType.get()));

  /** The (id, cat) schema of the partitioned tables and of the Parquet files P, Q, P2, Q2. */
  static final Schema ID_CAT =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "cat", Types.StringType.get()));

  final JsonNode inputs;
  final RESTCatalog catalog;

  JavaRestDriver(JsonNode inputs) {
    this.inputs = inputs;
    this.catalog = connect(inputs.get("credential").asText());
  }

  public static void main(String[] args) throws Exception {
    JavaRestDriver driver = new JavaRestDriver(JSON.readTree(new File(args[0])));
    try {
      driver.run();
    } finally {
      driver.catalog.close();
    }
  }

  RESTCatalog connect(String credential) {
    return connect(Map.of("uri", inputs.get("uri").asText(), "credential", credential));
  }

  /** A RESTCatalog initialised with {@code properties} and the local FileIO. */
  static RESTCatalog connect(Map<String, String> properties) {
    Map<String, String> props = new HashMap<>(properties);
    props.put("io-impl", LocalFileIO.class.getName());
    RESTCatalog rest = new RESTCatalog();
    rest.initialize("icefloe", props);
    return rest;
  }

  static void emit(String step, Map<String, Object> values) {
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("step", step);
    line.putAll(values);
    try {
      System.out.println(JSON.writeValueAsString(line));
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
    System.out.flush();
  }

  static void step(String name, Callable<Map<String, Object>> body) {
    try {
      emit(name, body.call());
    } catch (Exception e) {
      System.err.println(name + ": " + e);
      emit(name, Map.of("error", e.getClass().getSimpleName()));
    }
  }

  static Map<String, Object> value(Object v) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("value", v);
    return m;
  }

  static List<String> names(List<?> items) {
    return items.stream().map(Object::toString).sorted().collect(Collectors.toList());
  }

  DataFile dataFile(PartitionSpec spec, String key) {
    JsonNode f = inputs.get("files").get(key);
    long records = f.get("records").asLong();
    Map<Integer, ByteBuffer> lower = Map.of(1, Conversions.toByteBuffer(Types.LongType.get(), f.get("lower_id").asLong()));
    Map<Integer, ByteBuffer> upper = Map.of(1, Conversions.toByteBuffer(Types.LongType.get(), f.get("upper_id").asLong()));
    Metrics metrics = new Metrics(records, null, Map.of(1, records), Map.of(1, 0L), null, lower, upper);
    DataFiles.Builder builder =
        DataFiles.builder(spec)
            .withPath(f.get("path").asText())
            .withFileSizeInBytes(f.get("size").asLong())
            .withFormat(FileFormat.PARQUET)
            .withMetrics(metrics);
    if (f.has("partition") && spec.isPartitioned()) {
      builder.withPartitionPath(f.get("partition").asText());
    }
    return builder.build();
  }

  /** The delete file of input {@code key}: equality deletes on field 1 (id), else position deletes. */
  DeleteFile deleteFile(PartitionSpec spec, String key) {
    JsonNode d = inputs.get(key);
    FileMetadata.Builder builder = FileMetadata.deleteFileBuilder(spec);
    builder = key.equals("equality_deletes") ? builder.ofEqualityDeletes(1) : builder.ofPositionDeletes();
    return builder.withPath(d.get("path").asText()).withFileSizeInBytes(d.get("size").asLong())
        .withRecordCount(d.get("records").asLong()).withFormat(FileFormat.PARQUET).build();
  }

  static long currentId(Table t) {
    t.refresh();
    return t.currentSnapshot().snapshotId();
  }

  void run() throws Exception {
    namespaces();
    tables();
    commits();
    multiTableTransaction();
    concurrentCommits();
    views();
    scanIcefloeTable();
    new MaintenanceSteps(this).run();
    new ConflictSteps(this).run();
    new ClientOptionSteps(this).run();
    auth();
    cleanup();
  }

  void namespaces() {
    step("config", () -> value(new TreeMap<>(catalog.properties()).containsKey("uri")));
    step("create_namespace", () -> { catalog.createNamespace(NS, new HashMap<>(Map.of("owner", "java", "k", "v"))); return Map.of(); });
    step("create_namespace_again", () -> { catalog.createNamespace(NS); return Map.of(); });
    step("create_nested", () -> { catalog.createNamespace(Namespace.of("jns", "inner"), new HashMap<>()); return Map.of(); });
    step("create_gone", () -> { catalog.createNamespace(Namespace.of("gone"), new HashMap<>()); return Map.of(); });
    step("list_top", () -> value(names(catalog.listNamespaces())));
    step("list_nested", () -> value(names(catalog.listNamespaces(NS))));
    step("load_namespace", () -> value(new TreeMap<>(catalog.loadNamespaceMetadata(NS))));
    step("set_properties", () -> value(catalog.setProperties(NS, new HashMap<>(Map.of("k", "v2", "team", "ice")))));
    step("remove_properties", () -> value(catalog.removeProperties(NS, new HashSet<>(Set.of("owner", "missing")))));
    step("load_namespace_after", () -> value(new TreeMap<>(catalog.loadNamespaceMetadata(NS))));
    step("namespace_exists", () -> value(List.of(catalog.namespaceExists(NS), catalog.namespaceExists(Namespace.of("nope")))));
    step("load_missing_namespace", () -> value(catalog.loadNamespaceMetadata(Namespace.of("nope"))));
    step("drop_empty_namespace", () -> value(catalog.dropNamespace(Namespace.of("gone"))));
    step("drop_missing_namespace", () -> value(catalog.dropNamespace(Namespace.of("gone"))));
  }

  void tables() {
    TableIdentifier v1 = TableIdentifier.of(NS, "v1t");
    TableIdentifier parted = TableIdentifier.of(NS, "parted");
    TableIdentifier staged = TableIdentifier.of(NS, "staged");
    TableIdentifier tmp = TableIdentifier.of(NS, "tmp");
    step("create_v1", () -> {
      Table t = catalog.createTable(v1, EVENTS, PartitionSpec.unpartitioned(), new HashMap<>(Map.of("format-version", "1")));
      t.newAppend().appendFile(dataFile(t.spec(), "A")).commit();
      return value(((HasTableOperations) t).operations().current().formatVersion());
    });
    step("create_existing", () -> value(catalog.createTable(v1, EVENTS).name()));
    step("create_partitioned_sorted", () -> {
      Schema schema = ID_CAT;
      PartitionSpec spec = PartitionSpec.builderFor(schema).identity("cat").build();
      Table t = catalog.buildTable(parted, schema).withPartitionSpec(spec)
          .withSortOrder(SortOrder.builderFor(schema).asc("id").build())
          .withProperty("format-version", "2").create();
      t.newAppend().appendFile(dataFile(t.spec(), "P")).commit();
      t.updateSpec().addField(Expressions.bucket("id", 4)).commit();
      t.replaceSortOrder().desc("cat").asc("id").commit();
      t.refresh();
      return Map.of("spec", t.spec().toString().replaceAll("\\s+", " "), "sort", t.sortOrder().toString().replaceAll("\\s+", " "));
    });
    step("staged_create", () -> {
      Transaction txn = catalog.buildTable(staged, EVENTS).withProperty("format-version", "2").createTransaction();
      txn.newAppend().appendFile(dataFile(txn.table().spec(), "S")).commit();
      txn.updateProperties().set("staged", "yes").commit();
      boolean visibleBefore = catalog.tableExists(staged);
      txn.commitTransaction();
      return Map.of("visible_before", visibleBefore, "snapshots", size(catalog.loadTable(staged).snapshots()));
    });
    step("replace_transaction", () -> {
      Schema two = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()), Types.NestedField.optional(5, "extra", Types.StringType.get()));
      Transaction txn = catalog.buildTable(staged, two).withProperty("replaced", "true").replaceTransaction();
      txn.newAppend().appendFile(dataFile(txn.table().spec(), "S")).commit();
      txn.commitTransaction();
      Table t = catalog.loadTable(staged);
      return Map.of("columns", t.schema().columns().stream().map(Types.NestedField::name).collect(Collectors.toList()),
          "current", t.currentSnapshot() == null ? "none" : "some", "snapshots", size(t.snapshots()),
          "replaced", t.properties().get("replaced"));
    });
    step("create_or_replace_new", () -> {
      catalog.buildTable(tmp, EVENTS).createOrReplaceTransaction().commitTransaction();
      return value(catalog.tableExists(tmp));
    });
    step("list_tables", () -> value(names(catalog.listTables(NS))));
    step("rename_table", () -> {
      catalog.renameTable(tmp, TableIdentifier.of("jns", "inner", "moved"));
      return value(List.of(catalog.tableExists(tmp), catalog.tableExists(TableIdentifier.of("jns", "inner", "moved"))));
    });
    step("load_missing_table", () -> value(catalog.loadTable(tmp).name()));
    step("drop_table", () -> value(List.of(catalog.dropTable(TableIdentifier.of("jns", "inner", "moved"), false),
        catalog.dropTable(TableIdentifier.of("jns", "inner", "moved"), false))));
    step("register_table", () -> {
      TableIdentifier orphan = TableIdentifier.of(NS, "orphan");
      Table t = catalog.createTable(orphan, EVENTS);
      t.newAppend().appendFile(dataFile(t.spec(), "A")).commit();
      String location = ((HasTableOperations) catalog.loadTable(orphan)).operations().current().metadataFileLocation();
      catalog.dropTable(orphan, false);
      Table registered = catalog.registerTable(TableIdentifier.of(NS, "registered"), location);
      return Map.of("snapshots", size(registered.snapshots()), "records", registered.currentSnapshot().summary().get("total-records"));
    });
    step("register_live_metadata", () -> {
      String location = ((HasTableOperations) catalog.loadTable(v1)).operations().current().metadataFileLocation();
      return value(catalog.registerTable(TableIdentifier.of(NS, "second"), location).name());
    });
    step("drop_purge", () -> {
      return Map.of("dropped", catalog.dropTable(staged, true), "exists", catalog.tableExists(staged));
    });
  }

  static int size(Iterable<?> items) {
    return (int) StreamSupport.stream(items.spliterator(), false).count();
  }

  void commits() {
    TableIdentifier id = TableIdentifier.of(NS, "events");
    Map<String, Long> snaps = new LinkedHashMap<>();
    step("events_create", () -> {
      Table t = catalog.createTable(id, EVENTS, PartitionSpec.unpartitioned(), new HashMap<>(Map.of("format-version", "2", "drop-me", "x")));
      t.newAppend().appendFile(dataFile(t.spec(), "A")).commit();
      snaps.put("a", currentId(t));
      t.newFastAppend().appendFile(dataFile(t.spec(), "B")).commit();
      snaps.put("b", currentId(t));
      return value(size(t.snapshots()));
    });
    step("row_delta", () -> {
      Table t = catalog.loadTable(id);
      t.newRowDelta().addDeletes(deleteFile(t.spec(), "position_deletes")).validateFromSnapshot(snaps.get("b")).commit();
      snaps.put("delta", currentId(t));
      return value(t.currentSnapshot().operation());
    });
    step("overwrite", () -> {
      Table t = catalog.loadTable(id);
      t.newOverwrite().deleteFile(dataFile(t.spec(), "B")).addFile(dataFile(t.spec(), "C")).commit();
      snaps.put("overwrite", currentId(t));
      Map<String, String> s = t.currentSnapshot().summary();
      return Map.of("operation", t.currentSnapshot().operation(), "total_records", s.get("total-records"),
          "total_data_files", s.get("total-data-files"), "total_delete_files", s.get("total-delete-files"));
    });
    step("delete_file", () -> {
      Table t = catalog.loadTable(id);
      t.newAppend().appendFile(dataFile(t.spec(), "D")).commit();
      t.newDelete().deleteFile(inputs.get("files").get("D").get("path").asText()).commit();
      snaps.put("deleted", currentId(t));
      return Map.of("operation", t.currentSnapshot().operation(), "total_records", t.currentSnapshot().summary().get("total-records"));
    });
    step("schema_evolution", () -> {
      Table t = catalog.loadTable(id);
      t.updateSchema().updateColumn("qty", Types.LongType.get()).commit();
      t.updateSchema().renameColumn("name", "label").deleteColumn("flag").commit();
      t.updateSchema().addColumn("note", Types.StringType.get(), "added by java").commit();
      t = catalog.loadTable(id);
      return Map.of("schema_id", t.schema().schemaId(), "schemas", t.schemas().size(),
          "columns", t.schema().columns().stream().map(f -> f.name() + ":" + f.type()).collect(Collectors.toList()));
    });
    step("properties", () -> {
      Table t = catalog.loadTable(id);
      t.updateProperties().set("owner", "java").remove("drop-me").commit();
      Map<String, String> props = catalog.loadTable(id).properties();
      return Map.of("owner", props.get("owner"), "has_drop_me", props.containsKey("drop-me"));
    });
    step("refs", () -> {
      Table t = catalog.loadTable(id);
      t.manageSnapshots().createTag("first", snaps.get("a")).createBranch("audit", snaps.get("deleted")).commit();
      t.newAppend().appendFile(dataFile(t.spec(), "D")).toBranch("audit").commit();
      t.refresh();
      return Map.of("refs", new TreeMap<>(t.refs()).keySet(),
          "audit_parent_is_main", t.snapshot("audit").parentId().equals(t.currentSnapshot().snapshotId()));
    });
    step("cherry_pick_rollback", () -> {
      Table t = catalog.loadTable(id);
      t.newAppend().appendFile(dataFile(t.spec(), "D")).stageOnly().commit();
      t.refresh();
      long staged = StreamSupport.stream(t.snapshots().spliterator(), false)
          .filter(s -> !t.refs().values().stream().anyMatch(r -> r.snapshotId() == s.snapshotId()))
          .map(Snapshot::snapshotId).max((x, y) -> Long.compare(
              t.snapshot(x).sequenceNumber(), t.snapshot(y).sequenceNumber())).get();
      snaps.put("staged", staged);
      boolean stagedNotCurrent = t.currentSnapshot().snapshotId() != staged;
      t.manageSnapshots().cherrypick(staged).commit();
      long picked = currentId(t);
      t.manageSnapshots().rollbackTo(snaps.get("deleted")).commit();
      return Map.of("staged_not_current", stagedNotCurrent, "fast_forward", picked == staged,
          "rolled_back", currentId(t) == snaps.get("deleted"));
    });
    step("expire_snapshots", () -> {
      Table t = catalog.loadTable(id);
      int before = size(t.snapshots());
      t.expireSnapshots().expireSnapshotId(snaps.get("staged")).cleanExpiredFiles(true).commit();
      t.refresh();
      return Map.of("before", before, "after", size(t.snapshots()), "staged_gone", t.snapshot(snaps.get("staged")) == null);
    });
    step("snapshot_ids", () -> value(snaps));
  }

  void multiTableTransaction() {
    TableIdentifier a = TableIdentifier.of(NS, "events");
    TableIdentifier b = TableIdentifier.of(NS, "v1t");
    step("multi_table_commit", () -> {
      TableMetadata baseA = ((HasTableOperations) catalog.loadTable(a)).operations().current();
      TableMetadata baseB = ((HasTableOperations) catalog.loadTable(b)).operations().current();
      TableCommit ca = TableCommit.create(a, baseA, TableMetadata.buildFrom(baseA).setProperties(Map.of("txn", "1")).build());
      TableCommit cb = TableCommit.create(b, baseB, TableMetadata.buildFrom(baseB).setProperties(Map.of("txn", "1")).build());
      catalog.commitTransaction(ca, cb);
      return value(List.of(catalog.loadTable(a).properties().get("txn"), catalog.loadTable(b).properties().get("txn")));
    });
    // A's base predates a concurrent column add, so A's assert-last-assigned-field-id fails and
    // B's property change, in the same transaction, must not land either.
    step("multi_table_commit_stale", () -> {
      TableMetadata staleA = ((HasTableOperations) catalog.loadTable(a)).operations().current();
      Table fresh = catalog.loadTable(a);
      fresh.updateSchema().addColumn("late", Types.IntegerType.get()).commit();
      TableMetadata staleB = ((HasTableOperations) catalog.loadTable(b)).operations().current();
      TableCommit ca = TableCommit.create(a, staleA, TableMetadata.buildFrom(staleA).addSchema(
          new Schema(staleA.schema().columns().stream().collect(Collectors.toList()).subList(0, 1)), staleA.lastColumnId()).build());
      TableCommit cb = TableCommit.create(b, staleB, TableMetadata.buildFrom(staleB).setProperties(Map.of("txn", "2")).build());
      catalog.commitTransaction(ca, cb);
      return Map.of("committed", true);
    });
    step("multi_table_commit_stale_after", () -> value(catalog.loadTable(b).properties().get("txn")));
  }

  void concurrentCommits() throws Exception {
    TableIdentifier id = TableIdentifier.of(NS, "hot");
    int threads = inputs.get("threads").asInt();
    int perThread = inputs.get("commits_per_thread").asInt();
    step("concurrent_appends", () -> {
      catalog.createTable(id, EVENTS, PartitionSpec.unpartitioned(), new HashMap<>(Map.of(
          "format-version", "2", "commit.retry.num-retries", "100", "commit.retry.min-wait-ms", "5", "commit.retry.max-wait-ms", "100")));
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<Integer>> done = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        done.add(pool.submit(() -> {
          Table t = catalog.loadTable(id);
          for (int j = 0; j < perThread; j++) {
            t.newFastAppend().appendFile(dataFile(t.spec(), "A")).commit();
          }
          return perThread;
        }));
      }
      int committed = 0;
      try {
        for (Future<Integer> f : done) {
          committed += f.get();
        }
      } finally {
        pool.shutdownNow();
      }
      Table t = catalog.loadTable(id);
      return Map.of("committed", committed, "snapshots", size(t.snapshots()),
          "total_records", t.currentSnapshot().summary().get("total-records"));
    });
  }

  void views() {
    TableIdentifier v = TableIdentifier.of(NS, "v_events");
    Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
    step("create_view", () -> {
      View view = catalog.buildView(v).withSchema(schema).withDefaultNamespace(NS)
          .withQuery("spark", "SELECT id FROM events").withProperty("comment", "by java").create();
      return Map.of("version", view.currentVersion().versionId(), "sql", view.sqlFor("spark").sql());
    });
    step("create_view_again", () -> value(catalog.buildView(v).withSchema(schema).withDefaultNamespace(NS)
        .withQuery("spark", "SELECT 1").create().name()));
    step("replace_view", () -> {
      View view = catalog.buildView(v).withSchema(schema).withDefaultNamespace(NS)
          .withQuery("spark", "SELECT id FROM events WHERE id > 1").withQuery("trino", "SELECT id FROM events WHERE id > 1")
          .replace();
      return Map.of("version", view.currentVersion().versionId(), "versions", size(view.versions()),
          "dialects", view.currentVersion().representations().size());
    });
    step("load_view", () -> {
      View view = catalog.loadView(v);
      return Map.of("sql", view.sqlFor("spark").sql(), "comment", view.properties().get("comment"));
    });
    step("list_views", () -> value(names(catalog.listViews(NS))));
    step("view_is_not_table", () -> value(List.of(catalog.viewExists(v), catalog.tableExists(v))));
    step("rename_view", () -> {
      catalog.renameView(v, TableIdentifier.of(NS, "v_renamed"));
      return value(names(catalog.listViews(NS)));
    });
    step("drop_view", () -> value(List.of(catalog.dropView(TableIdentifier.of(NS, "v_renamed")),
        catalog.dropView(TableIdentifier.of(NS, "v_renamed")))));
  }

  void scanIcefloeTable() {
    step("scan_icefloe_table", () -> {
      Table t = catalog.loadTable(TableIdentifier.parse(inputs.get("icefloe_table").asText()));
      Map<String, Long> files = new TreeMap<>();
      try (CloseableIterable<FileScanTask> tasks = t.newScan().planFiles()) {
        for (FileScanTask task : tasks) {
          files.put(task.file().path().toString(), task.file().recordCount());
        }
      }
      return value(files);
    });
  }

  void auth() {
    step("bad_secret", () -> value(connect(inputs.get("bad_credential").asText()).listNamespaces().size()));
  }

  void cleanup() {
    step("drop_non_empty_namespace", () -> value(catalog.dropNamespace(NS)));
  }
}
