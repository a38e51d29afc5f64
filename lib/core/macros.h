#pragma once
#define KG_CONCAT_INNER(a, b) a##b
#define KG_CONCAT(a, b) KG_CONCAT_INNER(a, b)
