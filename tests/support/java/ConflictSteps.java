import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Types;

/**
 * Commits from a stale table object that another writer overtook: the server must answer 409 so
 * Java re-validates (a rewrite of a file another writer deleted, or a row delta conflicting with
 * an append, then fails in Java); property updates, which Java re-applies, all land.
 */
final class ConflictSteps {
  private static final TableIdentifier ID = TableIdentifier.of("jns", "conflicts");

  private final JavaRestDriver driver;

  ConflictSteps(JavaRestDriver driver) {
    this.driver = driver;
  }

  void run() {
    JavaRestDriver.step("stale_rewrite_of_deleted_file", () -> {
      Table t = driver.catalog.createTable(ID, JavaRestDriver.ID_CAT, PartitionSpec.unpartitioned(), new HashMap<>(Map.of("format-version", "2")));
      t.newAppend().appendFile(driver.dataFile(t.spec(), "P")).appendFile(driver.dataFile(t.spec(), "Q")).commit();
      Table stale = driver.catalog.loadTable(ID);
      driver.catalog.loadTable(ID).newDelete().deleteFile(driver.inputs.get("files").get("P").get("path").asText()).commit();
      stale.newRewrite().rewriteFiles(Set.of(driver.dataFile(stale.spec(), "P")), Set.of(driver.dataFile(stale.spec(), "P2"))).commit();
      return Map.of("committed", true);
    });
    JavaRestDriver.step("stale_row_delta_conflict", () -> {
      Table stale = driver.catalog.loadTable(ID);
      long base = stale.currentSnapshot().snapshotId();
      driver.catalog.loadTable(ID).newAppend().appendFile(driver.dataFile(stale.spec(), "Q2")).commit();
      stale.newRowDelta().addDeletes(driver.deleteFile(stale.spec(), "position_deletes")).validateFromSnapshot(base).validateNoConflictingDataFiles()
          .conflictDetectionFilter(Expressions.alwaysTrue()).commit();
      return Map.of("committed", true);
    });
    JavaRestDriver.step("stale_schema_updates", () -> {
      List<Table> stale = staleCopies(3);
      List<String> outcomes = new ArrayList<>();
      for (int i = 0; i < stale.size(); i++) {
        try {
          stale.get(i).updateSchema().addColumn("c" + i, Types.IntegerType.get()).commit();
          outcomes.add("committed");
        } catch (CommitFailedException e) {  // Java does not re-apply a schema change on a new base
          outcomes.add("CommitFailedException");
        }
      }
      return Map.of("outcomes", outcomes, "columns", columns(driver.catalog.loadTable(ID)));
    });
    JavaRestDriver.step("stale_property_updates", () -> {
      List<Table> stale = staleCopies(3);
      for (int i = 0; i < stale.size(); i++) {
        stale.get(i).updateProperties().set("p" + i, "v").commit();  // retried on 409: all land
      }
      return JavaRestDriver.value(driver.catalog.loadTable(ID).properties().keySet().stream()
          .filter(k -> k.matches("p[0-9]")).sorted().collect(Collectors.toList()));
    });
  }

  /** {@code n} table objects loaded before any of them commits. */
  private List<Table> staleCopies(int n) {
    List<Table> tables = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      tables.add(driver.catalog.loadTable(ID));
    }
    return tables;
  }

  private static List<String> columns(Table t) {
    return t.schema().columns().stream().map(Types.NestedField::name).collect(Collectors.toList());
  }
}
