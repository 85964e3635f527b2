import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.GenericBlobMetadata;
import org.apache.iceberg.GenericStatisticsFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ImmutableGenericPartitionStatisticsFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;

/**
 * Table maintenance through the real RESTCatalog: dynamic partition overwrite, compaction,
 * manifest rewrite, branch management, location and format-version changes, statistics, expiry
 * with incremental cleanup, equality deletes, a filtered scan, an explicit table location.
 */
final class MaintenanceSteps {
  private static final Schema DAILY = JavaRestDriver.ID_CAT;
  private static final TableIdentifier ID = TableIdentifier.of("jns", "daily");

  private final JavaRestDriver driver;

  MaintenanceSteps(JavaRestDriver driver) {
    this.driver = driver;
  }

  private DataFile file(Table t, String key) {
    return driver.dataFile(t.spec(), key);
  }

  void run() {
    String warehouse = driver.inputs.get("warehouse").asText();
    JavaRestDriver.step("daily_replace_partitions", () -> {
      PartitionSpec spec = PartitionSpec.builderFor(DAILY).identity("cat").build();
      Table t = driver.catalog.createTable(ID, DAILY, spec, new HashMap<>(Map.of("format-version", "2")));
      t.newAppend().appendFile(file(t, "P")).appendFile(file(t, "Q")).commit();
      t.newReplacePartitions().addFile(file(t, "P2")).commit();
      return Map.of("operation", t.currentSnapshot().operation(),
          "total_records", t.currentSnapshot().summary().get("total-records"));
    });
    JavaRestDriver.step("daily_rewrite_files", () -> {
      Table t = driver.catalog.loadTable(ID);
      t.newRewrite().rewriteFiles(Set.of(file(t, "Q")), Set.of(file(t, "Q2"))).commit();
      t.rewriteManifests().clusterBy(f -> "all").commit();
      return Map.of("operation", t.currentSnapshot().operation(), "snapshots", JavaRestDriver.size(t.snapshots()));
    });
    JavaRestDriver.step("daily_branches", () -> {
      Table t = driver.catalog.loadTable(ID);
      long main = JavaRestDriver.currentId(t);
      t.manageSnapshots().createBranch("dev", main).createTag("keep", main).commit();
      t.newFastAppend().appendFile(file(t, "P")).toBranch("dev").commit();
      t.manageSnapshots().fastForwardBranch("main", "dev").commit();
      t.manageSnapshots().renameBranch("dev", "dev2").replaceTag("keep", main)
          .setMinSnapshotsToKeep("main", 3).setMaxRefAgeMs("keep", 86_400_000L).commit();
      t.manageSnapshots().createTag("gone", main).commit();
      t.manageSnapshots().removeTag("gone").removeBranch("dev2").commit();
      t.refresh();
      return Map.of("refs", new TreeMap<>(t.refs()).keySet(), "main_moved", t.currentSnapshot().snapshotId() != main,
          "min_snapshots", t.refs().get("main").minSnapshotsToKeep(), "keep_age", t.refs().get("keep").maxRefAgeMs());
    });
    JavaRestDriver.step("filtered_scan", () -> {
      Table t = driver.catalog.loadTable(ID);
      long files = 0;
      try (CloseableIterable<FileScanTask> tasks = t.newScan().filter(Expressions.equal("cat", "b")).planFiles()) {
        for (FileScanTask task : tasks) {
          files += task.file().recordCount();
        }
      }
      return JavaRestDriver.value(files);
    });
    JavaRestDriver.step("statistics", () -> {
      Table t = driver.catalog.loadTable(ID);
      long snap = t.currentSnapshot().snapshotId();
      long seq = t.currentSnapshot().sequenceNumber();
      t.updateStatistics().setStatistics(snap, new GenericStatisticsFile(snap, t.location() + "/metadata/stats.puffin",
          100, 40, List.of(new GenericBlobMetadata("apache-datasketches-theta-v1", snap, seq, List.of(1), Map.of("ndv", "4"))))).commit();
      t.updatePartitionStatistics().setPartitionStatistics(ImmutableGenericPartitionStatisticsFile.builder()
          .snapshotId(snap).path(t.location() + "/metadata/partition-stats.parquet").fileSizeInBytes(50).build()).commit();
      t.refresh();
      int before = t.statisticsFiles().size() + t.partitionStatisticsFiles().size();
      t.updatePartitionStatistics().removePartitionStatistics(snap).commit();
      t.refresh();
      return Map.of("before", before, "after", t.statisticsFiles().size() + t.partitionStatisticsFiles().size(),
          "ndv", t.statisticsFiles().get(0).blobMetadata().get(0).properties().get("ndv"));
    });
    JavaRestDriver.step("update_location", () -> {
      Table t = driver.catalog.loadTable(ID);
      t.updateLocation().setLocation(warehouse + "/moved/daily").commit();
      return JavaRestDriver.value(driver.catalog.loadTable(ID).location().equals(warehouse + "/moved/daily"));
    });
    JavaRestDriver.step("location_outside_warehouse", () -> {
      driver.catalog.loadTable(ID).updateLocation().setLocation("/elsewhere/daily").commit();
      return Map.of();
    });
    JavaRestDriver.step("explicit_location", () -> {
      Table t = driver.catalog.buildTable(TableIdentifier.of("jns", "placed"), DAILY)
          .withLocation(warehouse + "/placed-here").create();
      return JavaRestDriver.value(t.location());
    });
    JavaRestDriver.step("upgrade_format_version", () -> {
      Table t = driver.catalog.createTable(TableIdentifier.of("jns", "upgraded"), DAILY, PartitionSpec.unpartitioned(),
          new HashMap<>(Map.of("format-version", "1")));
      TableOperations ops = ((HasTableOperations) t).operations();
      TableMetadata base = ops.current();
      ops.commit(base, base.upgradeToFormatVersion(2));
      return JavaRestDriver.value(((HasTableOperations) driver.catalog.loadTable(TableIdentifier.of("jns", "upgraded")))
          .operations().current().formatVersion());
    });
    JavaRestDriver.step("equality_deletes", () -> {
      Table t = driver.catalog.createTable(TableIdentifier.of("jns", "eqdel"), DAILY, PartitionSpec.unpartitioned(),
          new HashMap<>(Map.of("format-version", "2", "write.metadata.delete-after-commit.enabled", "true",
              "write.metadata.previous-versions-max", "1")));
      t.newAppend().appendFile(driver.dataFile(t.spec(), "P")).appendFile(driver.dataFile(t.spec(), "Q")).commit();
      t.newRowDelta().addDeletes(driver.deleteFile(t.spec(), "equality_deletes")).commit();
      t.updateProperties().set("after", "deletes").commit();
      int deleteFiles = 0;
      try (CloseableIterable<FileScanTask> tasks = t.newScan().planFiles()) {
        for (FileScanTask task : tasks) {
          deleteFiles += task.deletes().size();
        }
      }
      return Map.of("delete_files_per_task", deleteFiles, "metadata_log", ((HasTableOperations) t).operations().current().previousFiles().size());
    });
    JavaRestDriver.step("expire_incremental", () -> {
      Table t = driver.catalog.loadTable(TableIdentifier.of("jns", "hot"));
      t.expireSnapshots().expireOlderThan(System.currentTimeMillis() + 1).retainLast(2).cleanExpiredFiles(true).commit();
      t.refresh();
      return Map.of("snapshots", JavaRestDriver.size(t.snapshots()),
          "total_records", t.currentSnapshot().summary().get("total-records"));
    });
  }
}
